"""A LeRobot ACT checkpoint from disk runs through `metasim eval policy=lerobot`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lerobot")

from metasim.errors import MetasimInputError
from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.policies.lerobot_testing import build_random_act_checkpoint


@pytest.fixture(scope="module")
def act_ckpt(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("act")
    return build_random_act_checkpoint(
        folder, cameras={"front": (96, 96), "wrist": (64, 64)}, state_dim=8, action_dim=7
    )


@pytest.mark.slow
def test_metasim_eval_runs_a_lerobot_checkpoint(act_ckpt: Path, tmp_path: Path):
    out = tmp_path / "run"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "metasim.cli",
            "eval",
            "--quiet",
            "policy=lerobot",
            f"policy.path={act_ckpt}",
            "+suite.tasks=[lift_cube]",
            "episodes=2",
            "num_envs=2",
            f"out={out}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    lift = summary["tasks"]["lift_cube"]
    assert lift["n"] == 2 and lift["errors"] == 0  # random weights: runs, does not succeed
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["policy"]["path"] == str(act_ckpt)
    # The checkpoint's hash, for `metasim runs` (metasim.evaluate.checkpoint).
    from metasim.evaluate.checkpoint import tree_sha256

    assert manifest["checkpoint"] == {"path": str(act_ckpt), "sha256": tree_sha256(act_ckpt)}


@pytest.mark.slow
def test_chunks_are_executed_n_action_steps_at_a_time(act_ckpt: Path, lift_scene):
    from metasim.policies import lerobot_policy

    calls: list[int] = []
    orig = lerobot_policy.LeRobotPolicy.infer_batch

    def spy(self, env_ids, batch):
        calls.append(len(env_ids))
        out = orig(self, env_ids, batch)
        assert out.shape[1] == 5  # the checkpoint's n_action_steps of its 10-step chunk
        assert batch["observation.images.front"].shape[1:] == (96, 96, 3)
        assert batch["observation.images.wrist"].shape[1:] == (64, 64, 3)
        return out

    lerobot_policy.LeRobotPolicy.infer_batch = spy  # type: ignore[method-assign]
    try:
        recs = run_one(lift_scene, act_ckpt)
    finally:
        lerobot_policy.LeRobotPolicy.infer_batch = orig  # type: ignore[method-assign]
    assert recs[0].error is None
    assert len(calls) == int(np.ceil(recs[0].steps / 5))


def test_mismatches_are_named_at_start_up(act_ckpt: Path, lift_scene):
    with pytest.raises(MetasimInputError, match="width 8"):
        run_one(lift_scene, act_ckpt, state=["joint_pos"])  # 7 wide, the checkpoint takes 8
    conv = {"space": "ee_delta", "rotation": "quat_wxyz"}  # 8-D, the checkpoint outputs 7
    with pytest.raises(MetasimInputError, match="7-D actions"):
        run_one(lift_scene, act_ckpt, actions=conv)


def run_one(scene, ckpt: Path, state=("joint_pos", "gripper"), **extra):
    """One episode of the checkpoint through the evaluation loop."""
    options = {"path": str(ckpt), "observation": {"state": {"observation.state": list(state)}}}
    options.update(extra)
    return list(run_task(scene, RolloutSpec.of("lerobot", options, seed=0, num_envs=1), 1))
