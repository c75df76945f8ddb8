"""One checkpoint, two harnesses, end to end and bounded (scripts/learned_policy_metaworld.sh
at its smallest): a Meta-World demonstration recorded by `metasim collect
record=lerobot_metaworld`, a diffusion policy trained two steps by LeRobot's own
`lerobot-train` on it, then scored by `metasim eval policy=lerobot_metaworld` and by
LeRobot's own `lerobot-eval` on the package in the Meta-World reference venv (one episode
each: about 3 min), and the two read into one table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from metasim.cli.main import main

pytestmark = [pytest.mark.reference, pytest.mark.learned]

pytest.importorskip("lerobot")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

TASK = "drawer-close-v3"


@pytest.fixture(scope="module")
def checkpoint(mw_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("learned")
    demos = root / "demos"
    args = [
        "collect", "--quiet", "suite=metaworld_mt10", "policy=metaworld_expert",
        f"suite.tasks=[metaworld:{TASK}]", "episodes=1", "num_envs=1",
        "record=lerobot_metaworld", "image_size=32", f"out={demos}",
    ]  # fmt: skip
    assert main(args) == 0
    train = [
        str(Path(sys.executable).parent / "lerobot-train"),
        "--dataset.repo_id=metasim/metaworld", f"--dataset.root={demos}",
        "--policy.type=diffusion", "--policy.device=cpu", "--policy.push_to_hub=false",
        "--policy.resize_shape=[32,32]", "--policy.down_dims=[16,32]",
        "--policy.diffusion_step_embed_dim=16", "--policy.noise_scheduler_type=DDIM",
        "--policy.num_inference_steps=2", "--batch_size=4", "--num_workers=0", "--steps=2",
        "--save_freq=2", "--eval_freq=0", "--wandb.enable=false", f"--output_dir={root / 'train'}",
    ]  # fmt: skip
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", OMP_NUM_THREADS="1")
    proc = subprocess.run(train, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ckpt = root / "train" / "checkpoints" / "last" / "pretrained_model"
    config = json.loads((ckpt / "config.json").read_text())
    # what the policy declares it takes: LeRobot's Meta-World features at the recorded size
    assert config["input_features"]["observation.image"]["shape"] == [3, 32, 32]
    assert config["input_features"]["observation.state"]["shape"] == [4]
    return ckpt


def test_one_checkpoint_scored_by_metasim_and_by_lerobot_eval(
    checkpoint: Path, mw_python: Path, tmp_path: Path
) -> None:
    """LeRobot's own eval takes the checkpoint's 480x480 frames (the policy resizes them),
    as metasim's preset does; both report one episode of the task, read into one row."""
    from learned_policy_table import metasim_counts, table

    from metasim.reference import lerobot_eval

    ours = tmp_path / "metasim"
    args = [
        "eval", "--quiet", "suite=metaworld_mt10", "policy=lerobot_metaworld",
        f"policy.path={checkpoint}", f"suite.tasks=[metaworld:{TASK}]", "episodes=1",
        "num_envs=1", f"out={ours}",
    ]  # fmt: skip
    assert main(args) == 0
    summary = json.loads((ours / "summary.json").read_text())
    assert summary["tasks"][f"metaworld_{TASK}"]["errors"] == 0
    theirs = tmp_path / "lerobot"
    info = lerobot_eval.run(
        mw_python,
        [f"--policy.path={checkpoint}", "--policy.device=cpu", "--env.type=metaworld",
         f"--env.task={TASK}", "--eval.n_episodes=1", "--eval.batch_size=1"],
        theirs,
        timeout_s=900,
    )  # fmt: skip
    counts = lerobot_eval.per_task(info)
    assert set(counts) == {TASK} and counts[TASK][1] == 1
    (row,) = table(metasim_counts(ours), counts)
    assert row["task"] == TASK and row["metasim"][1] == 1 and row["lerobot"][1] == 1


def test_lerobot_eval_refuses_an_output_dir_of_its_own(mw_python: Path, tmp_path: Path) -> None:
    from metasim.errors import MetasimInputError
    from metasim.reference import lerobot_eval

    with pytest.raises(MetasimInputError, match="--output_dir"):
        lerobot_eval.run(mw_python, ["--output_dir=/tmp/x"], tmp_path / "out")
