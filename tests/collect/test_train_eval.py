"""The CI-sized loop end to end: 4 collected episodes -> LeRobot's own training script
(`lerobot-train`, a tiny ACT, 3 steps) -> the checkpoint evaluated on 2 episodes through
`metasim eval policy=lerobot`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.paths import ROOT
from tests.collect.collect_helpers import REPO, SIZE

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


@pytest.mark.slow
def test_trains_with_lerobot_and_evaluates_through_policy_lerobot(
    demos: Path, tmp_path: Path
) -> None:
    out = tmp_path / "act"
    script = ROOT / "scripts" / "train_lerobot.py"
    args = [f"--dataset.repo_id={REPO}", f"--dataset.root={demos}", f"--output_dir={out}"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script), *args, *TINY_ACT],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "step:3 " in done.stderr + done.stdout  # LeRobot's log line of the last step
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
