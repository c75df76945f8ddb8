"""Shared datasets of the collect tests: each collected once per session (real MuJoCo,
the scripted expert, LeRobot's dataset writer)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("lerobot")

from tests.collect.collect_helpers import collect


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
