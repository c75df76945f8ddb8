"""Shared datasets of the collect tests: each collected once per session (real MuJoCo,
the scripted expert, LeRobot's dataset writer)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.lanes import needs

pytest.importorskip("lerobot")

from tests.collect.collect_helpers import collect, lerobot_train


@pytest.fixture(scope="session")
def demos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lift_cube episodes 0..3, two envs."""
    out = tmp_path_factory.mktemp("collect") / "demos"
    assert collect(out) == 0
    return out


@pytest.fixture(scope="session")
def five(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lift_cube episodes 0..4, three envs (so slots and episodes pair up differently)."""
    out = tmp_path_factory.mktemp("collect") / "five"
    assert collect(out, episodes=5, num_envs=3) == 0
    return out


@pytest.fixture(scope="session")
@needs("learned")
def trained(
    demos: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """`lerobot-train` run once on `demos` (3 steps of a tiny ACT): its output folder and
    process (exit code and log), for the tests that check training and evaluate the result."""
    out = tmp_path_factory.mktemp("train") / "act"
    return out, lerobot_train(demos, out)
