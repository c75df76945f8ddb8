"""The CI-sized loop end to end: 4 collected episodes -> LeRobot's own `lerobot-train`
(a tiny ACT, 3 steps; the `trained` fixture) -> the checkpoint evaluated on 2 episodes
through `metasim eval policy=lerobot`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from metasim.cli.main import main
from tests.collect.collect_helpers import SIZE

pytestmark = pytest.mark.learned


@pytest.mark.slow
def test_trains_with_lerobot_and_evaluates_through_policy_lerobot(
    trained: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    out, done = trained
    assert done.returncode == 0, done.stderr[-3000:]
    ckpt = out / "checkpoints" / "last" / "pretrained_model"
    config = json.loads((ckpt / "config.json").read_text())
    assert config["type"] == "act"
    image_shapes = {k: v["shape"] for k, v in config["input_features"].items() if "images" in k}
    assert image_shapes == {
        "observation.images.front": [3, SIZE, SIZE],
        "observation.images.wrist": [3, SIZE, SIZE],
    }
    run = tmp_path / "eval"
    ev = ["eval", "--quiet", "policy=lerobot", f"policy.path={ckpt}", "suite.tasks=[lift_cube]"]
    assert main([*ev, "episodes=2", "num_envs=2", f"out={run}"]) == 0
    lift = json.loads((run / "summary.json").read_text())["tasks"]["lift_cube"]
    assert lift["n"] == 2 and lift["errors"] == 0  # ran to the time limit, no policy error
