#!/usr/bin/env bash
# Install LeRobot (policy=lerobot, metasim.policies.lerobot_runner; `lerobot-train`) into
# .venv next to the torch / torchvision pair of metasim's [torch] extra. Idempotent:
# re-running it changes nothing.
#   bash scripts/install_lerobot.sh            # into .venv
#   PIP=/other/venv/bin/pip bash scripts/install_lerobot.sh
#
# Why not a plain `lerobot` extra in pyproject.toml: every lerobot release on PyPI pins
# torch<2.11 (0.4.4; <2.8 before) and torchvision<0.26, and requires training/robot tools
# that neither the policy code nor `lerobot-train` on a local dataset imports (wandb,
# rerun-sdk, pynput, cmake, torchcodec, jsonlines). A resolver install would move torch
# and torchvision off the pair metasim pins. So lerobot itself goes in with --no-deps, and
# only what it imports is installed, pinned, with the torch pair repeated on every
# command so pip can never move it.
#
# `pip check` afterwards lists exactly lerobot's unmet pins; docs/install.md ("pip check") says
# why each is harmless. The final check imports torchvision's compiled ops and LeRobot's
# dataset class in a fresh interpreter, so a broken pair fails the set-up, not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP="${PIP:-.venv/bin/pip}"

LEROBOT_VERSION=0.4.4
DEPS=(
  "torch==2.14.1"            # unchanged: the [torch] extra's pair; listed so pip keeps it
  "torchvision==0.29.1"      # (ResNet backbones, image transforms of LeRobotDataset)
  "draccus==0.10.0"          # LeRobot's config (de)serialisation
  "huggingface-hub==0.35.3"  # lerobot: >=0.34.2,<0.36 (from_pretrained, HubMixin)
  "safetensors==0.8.0"       # model.safetensors and processor state
  "einops==0.8.2"
  "datasets==4.8.5"          # imported by lerobot.datasets.utils (config/optim import path)
  "accelerate==1.15.0"       # imported by lerobot.utils.utils
  "diffusers==0.35.2"        # imported by lerobot.policies (groot) at package import
  "av==15.1.0"               # imported by lerobot.datasets.video_utils (normalize processor)
  "pyserial==3.5"            # imported by lerobot.motors (robots -> envs -> train config)
  "deepdiff==8.6.2"          # imported by lerobot.robots
  "imageio==2.38.1"          # imported by lerobot.utils.io_utils
  "termcolor==3.3.0"         # imported by lerobot.scripts.lerobot_train (`lerobot-train`)
)

"$PIP" install -q "${DEPS[@]}"
if ! "$PIP" show lerobot 2>/dev/null | grep -qx "Version: ${LEROBOT_VERSION}"; then
  "$PIP" install -q --no-deps "lerobot==${LEROBOT_VERSION}"
fi
# torch's triton (GPU kernels only) clashes with Mesa's llvmpipe (see scripts/setup.sh);
# the installs above bring it back when it is missing.
"$PIP" uninstall -q -y triton 2>/dev/null || true
"$(dirname "$PIP")/python" -c "
import torch, torchvision
assert torch.__version__.split('+')[0] == '2.14.1', f'torch changed: {torch.__version__}'
boxes = torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.1]])
assert torchvision.ops.nms(boxes, torch.tensor([1.0, 0.9]), 0.5).tolist() == [0]
from lerobot.datasets.lerobot_dataset import LeRobotDataset
import lerobot.policies.factory, lerobot.processor
import lerobot
print('lerobot', lerobot.__version__, 'torch', torch.__version__, 'torchvision', torchvision.__version__)
"
