"""`metasim collect` records Meta-World: the package's scripted expert (reference venv) on
reach-v3, its 4-D `mocap_delta` actions named by their convention, written as a LeRobot
dataset that LeRobot's own dataset class loads as declared (two episodes, one camera,
32 px: about 15 s)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from metasim.cli.main import main
from metasim.collect.dataset import COLLECT_FILE, EPISODES_FILE

pytest.importorskip("lerobot")

TASK, CAMERA, SIZE = "reach-v3", "corner4", 32


def test_collects_a_metaworld_dataset_lerobot_loads(mw_python: Path, tmp_path: Path) -> None:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    out = tmp_path / "mw"
    args = [
        "collect", "--quiet", "suite=metaworld_mt10", "policy=metaworld_expert",
        f"suite.tasks=[metaworld:{TASK}]", "episodes=2", "num_envs=2", f"image_size={SIZE}",
        f"cameras=[{CAMERA}]", f"out={out}",
    ]  # fmt: skip
    assert main(args) == 0
    ds = LeRobotDataset("metasim/metaworld", root=out)
    assert ds.num_episodes == 2 and ds.fps == 80  # Meta-World's control rate
    assert ds.features["action"]["names"] == ["x", "y", "z", "gripper"]
    assert tuple(ds.features["action"]["shape"]) == (4,)
    key = f"observation.images.{CAMERA}"
    assert tuple(ds.features[key]["shape"]) == (SIZE, SIZE, 3)
    item = ds[0]
    assert tuple(item["action"].shape) == (4,) and tuple(item[key].shape) == (3, SIZE, SIZE)
    assert item["task"] == "reach"
    data = ds.hf_dataset.with_format("numpy")
    actions = np.stack(list(data["action"]))
    # the expert's actions as it gave them (the package's policies exceed [-1, 1]; the
    # env clips xyz to [-1, 1] when it applies them, as the package does)
    assert np.isfinite(actions).all() and np.abs(actions[:, :3]).max() > 0.1
    rows = [json.loads(x) for x in (out / "meta" / EPISODES_FILE).read_text().splitlines()]
    assert [r["success"] for r in rows] == [True, True]
    assert [int(n) for n in ds.meta.episodes["length"]] == [r["steps"] for r in rows]
    spec = json.loads((out / "meta" / COLLECT_FILE).read_text())
    assert spec["action_convention"]["space"] == "mocap_delta"
