#!/usr/bin/env bash
# Install LeRobot (policy=lerobot, metasim.policies.lerobot_runner) into .venv next to the
# CPU torch 2.13.0 that metasim pins. Idempotent: re-running it changes nothing.
#   bash scripts/install_lerobot.sh            # into .venv
#   PIP=/other/venv/bin/pip bash scripts/install_lerobot.sh
#
# Why not a plain `lerobot` extra in pyproject.toml: every lerobot release on PyPI pins
# torch<2.11 (0.4.4; <2.8 before) and torchvision<0.26, and requires training/robot tools
# the policy code never imports (wandb, rerun-sdk, pynput, cmake, torchcodec, jsonlines).
# A resolver install would replace torch with a multi-GB CUDA build. So lerobot itself goes
# in with --no-deps, and only what `lerobot.policies` / `lerobot.processor` import is
# installed, pinned, with torch==2.13.0 repeated on every command so pip can never move it.
#
# torchvision 0.28.0 is the release built for torch 2.13.0, but PyPI only has its CUDA
# build: its C++ ops do not load against the CPU torch, and `import torchvision` then fails
# ("operator torchvision::nms does not exist"). metasim.policies.lerobot_runner works
# around that (ACT uses torchvision's pure-Python ResNet only); see _prepare_torchvision.
#
# `pip check` afterwards lists lerobot's unmet pins (torch, torchvision, packaging,
# setuptools, and the tools above); they are expected and harmless for inference.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP="${PIP:-.venv/bin/pip}"

LEROBOT_VERSION=0.4.4
DEPS=(
  "torch==2.13.0"            # unchanged: already installed; listed so pip keeps it
  "torchvision==0.28.0"      # the release for torch 2.13.0 (ResNet backbones)
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
  "termcolor==3.3.0"         # imported by lerobot.scripts.lerobot_train (scripts/train_lerobot.py)
)

"$PIP" install -q "${DEPS[@]}"
if ! "$PIP" show lerobot 2>/dev/null | grep -qx "Version: ${LEROBOT_VERSION}"; then
  "$PIP" install -q --no-deps "lerobot==${LEROBOT_VERSION}"
fi
"$(dirname "$PIP")/python" -c "
import torch
assert torch.__version__.split('+')[0] == '2.13.0', f'torch changed: {torch.__version__}'
from metasim.policies.lerobot_runner import import_lerobot
import_lerobot()
import lerobot
print('lerobot', lerobot.__version__, 'torch', torch.__version__)
"
