"""Helpers of the collect tests: run `metasim collect`, read the dataset back with
LeRobot's own dataset class."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("lerobot")

from metasim.cli.main import main
from metasim.collect.dataset import EPISODES_FILE
from metasim.policies.lerobot_runner import import_lerobot

SIZE = 32  # recorded image size: small, the tests check shapes and equality
REPO = "metasim/tabletop"


def collect(out: Path, *extra: str, episodes: int = 4, num_envs: int = 2) -> int:
    """`metasim collect` of lift_cube (exit code)."""
    args = ["collect", "--quiet", "suite.tasks=[lift_cube]", f"image_size={SIZE}"]
    return main([*args, f"episodes={episodes}", f"num_envs={num_envs}", f"out={out}", *extra])


def load(root: Path) -> Any:
    """The dataset, opened with LeRobot's own dataset class."""
    import_lerobot()
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
