"""Helpers of the collect tests: run `metasim collect`, read the dataset back with
LeRobot's own dataset class, train on it with LeRobot's own `lerobot-train`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("lerobot")

from metasim.cli.main import main
from metasim.collect.dataset import EPISODES_FILE

SIZE = 32  # recorded image size: small, the tests check shapes and equality
REPO = "metasim/tabletop"
# The venv's own console script (the one `pip install lerobot` made), not a wrapper.
LEROBOT_TRAIN = Path(sys.executable).parent / "lerobot-train"
# Everything local: no hub request, no wandb; one torch thread on the shared CPU.
OFFLINE = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "WANDB_MODE": "disabled",
    "OMP_NUM_THREADS": "1",
}
TINY_ACT = [
    "--policy.type=act",
    "--policy.device=cpu",
    "--policy.push_to_hub=false",
    "--policy.pretrained_backbone_weights=null",
    "--policy.chunk_size=10",
    "--policy.n_action_steps=5",
    "--policy.dim_model=64",
    "--policy.dim_feedforward=128",
    "--policy.n_encoder_layers=1",
    "--policy.n_decoder_layers=1",
    "--batch_size=2",
    "--num_workers=0",
    "--steps=3",
    "--save_freq=3",
    "--log_freq=1",
    "--eval_freq=0",
    "--wandb.enable=false",
]


def collect(out: Path, *extra: str, episodes: int = 4, num_envs: int = 2) -> int:
    """`metasim collect` of lift_cube (exit code)."""
    args = ["collect", "--quiet", "suite.tasks=[lift_cube]", f"image_size={SIZE}"]
    return main([*args, f"episodes={episodes}", f"num_envs={num_envs}", f"out={out}", *extra])


def load(root: Path) -> Any:
    """The dataset, opened with LeRobot's own dataset class."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset(REPO, root=root)


def lines(root: Path) -> list[dict[str, Any]]:
    """metasim's episode lines."""
    text = (root / "meta" / EPISODES_FILE).read_text()
    return [json.loads(x) for x in text.splitlines()]


def columns(root: Path) -> dict[str, np.ndarray]:
    """Every frame's action, state, indices and front image, stacked (N, ...)."""
    data = load(root).hf_dataset.with_format("numpy")
    keys = ("action", "observation.state", "episode_index", "frame_index", "index")
    out = {k: np.stack(list(data[k])) for k in keys}
    out["image"] = np.stack([np.asarray(im) for im in data["observation.images.front"]])
    return out


def lerobot_train(root: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """`lerobot-train` of a tiny ACT for 3 steps on the dataset at `root` (its process)."""
    args = [f"--dataset.repo_id={REPO}", f"--dataset.root={root}", f"--output_dir={out}"]
    return subprocess.run(
        [str(LEROBOT_TRAIN), *args, *TINY_ACT],
        capture_output=True,
        text=True,
        timeout=600,
        env=OFFLINE,
    )
