"""The README's venv reads and trains on what `metasim collect` writes, with nothing from
metasim in the way: torchvision's compiled ops load, a plain interpreter (`python -I`, no
metasim import, no PYTHONPATH) opens the dataset with `LeRobotDataset`, and LeRobot's own
console scripts (`lerobot-train`, `lerobot-eval`) run from the venv's bin folder."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from metasim.paths import ROOT
from tests.collect.collect_helpers import OFFLINE, REPO, SIZE, lines


def plain_python(code: str) -> str:
    """Run `code` in a fresh, isolated interpreter of this venv; its stdout."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=OFFLINE,
        cwd=Path(sys.executable).parent,  # not the repository: nothing of it on sys.path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_venv_has_the_torch_pair_that_pyproject_pins() -> None:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = dict(r.split("==") for r in extra["optional-dependencies"]["torch"])
    assert set(pins) == {"torch", "torchvision"}
    for name, pinned in pins.items():
        assert version(name).split("+")[0] == pinned, f"{name} in the venv is not the pin"


@pytest.mark.slow
def test_torchvision_ops_load_in_a_plain_interpreter() -> None:
    out = plain_python(
        "import torch, torchvision\n"
        "from torchvision.ops import nms, roi_align\n"
        "boxes = torch.tensor([[0.0, 0.0, 2.0, 2.0], [0.0, 0.0, 2.0, 2.1], [5, 5, 6, 6]])\n"
        "keep = nms(boxes, torch.tensor([0.9, 1.0, 0.5]), 0.5)\n"
        "feat = torch.arange(16.0).reshape(1, 1, 4, 4)\n"
        "pooled = roi_align(feat, [torch.tensor([[0.0, 0.0, 3.0, 3.0]])], output_size=1)\n"
        "print(keep.tolist(), round(float(pooled), 4))\n"
    )
    # the C++ kernels ran: the boxes kept, and the mean of 4y + x over [0, 3]^2
    assert out.split() == ["[1,", "2]", "7.5"]


@pytest.mark.slow
def test_lerobot_dataset_reads_the_collection_in_a_plain_interpreter(demos: Path) -> None:
    out = plain_python(
        "import json, sys\n"
        "from lerobot.datasets.lerobot_dataset import LeRobotDataset\n"
        f"ds = LeRobotDataset({REPO!r}, root={str(demos)!r})\n"
        "first, last = ds[0], ds[len(ds) - 1]\n"
        "img = first['observation.images.front']\n"
        "print(json.dumps({'episodes': ds.num_episodes, 'frames': ds.num_frames,\n"
        "    'len': len(ds), 'lengths': [int(n) for n in ds.meta.episodes['length']],\n"
        "    'last_episode': int(last['episode_index']), 'image': list(img.shape),\n"
        "    'dtype': str(img.dtype), 'max': float(img.max()), 'task': first['task']}))\n"
    )
    got = json.loads(out.strip().splitlines()[-1])
    steps = [r["steps"] for r in lines(demos)]  # metasim's own record of what it ran
    assert got["episodes"] == len(steps) == 4 and got["last_episode"] == 3
    assert got["lengths"] == steps and got["frames"] == got["len"] == sum(steps)
    assert got["image"] == [3, SIZE, SIZE] and got["dtype"] == "torch.float32"
    assert 0.0 < got["max"] <= 1.0  # torchvision's to-tensor conversion of the PNG
    assert got["task"] == "pick up the red cube"


@pytest.mark.learned
@pytest.mark.slow  # `lerobot-train` starts in ~15 s and trains 3 steps (shared with eval)
def test_lerobot_train_runs_on_the_collection(
    trained: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    out, done = trained
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stderr + done.stdout
    assert re.search(r"step:3 \S* ?smpl:6 ", log), log[-2000:]  # 3 steps of batch 2
    ckpt = out / "checkpoints" / "000003" / "pretrained_model"
    assert (ckpt / "model.safetensors").stat().st_size > 0
    stats = json.loads((ckpt / "config.json").read_text())
    assert stats["type"] == "act" and stats["chunk_size"] == 10


@pytest.mark.slow
def test_lerobot_eval_starts_from_the_venv() -> None:
    """`lerobot-eval` imports LeRobot's dataset, policy and env packages before it parses
    its arguments; `--help` therefore fails if any of them (torchvision first) cannot load."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lerobot-eval"), "--help"],
        capture_output=True,
        text=True,
        timeout=300,
        env=OFFLINE,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("usage: lerobot-eval") and "--env.type" in done.stdout
