"""A task source registered from outside the package (tests/toy_bench/source.py, prefix
`toy:`) resolves everywhere tasks are named: `metasim eval` (by its suite name and by
reference), `metasim scene validate`, gym registration (collect and report:
test_toy_benchmark.py). Without the task-source registry every one of these reads
`toy:lift/0` as a missing scene file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metasim.cli.main import main

RUN = ["policy=scripted", "episodes=2", "num_envs=2"]


def test_eval_runs_the_sources_suite(toy_source: str, tmp_path: Path) -> None:
    """`suite=toy_suite` is the source's own suite: no eval/ file names it."""
    assert main(["eval", "suite=toy_suite", *RUN, f"out={tmp_path}"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert sorted(summary["tasks"]) == ["toy_lift_0", "toy_lift_1"]
    assert all(t["n"] == 2 for t in summary["tasks"].values())
    assert summary["tasks"]["toy_lift_0"]["successes"] >= 1  # the expert lifts the cube


def test_eval_takes_a_reference(toy_source: str, tmp_path: Path) -> None:
    args = ["eval", "suite=tabletop", f"suite.tasks=[{toy_source}lift/1]", *RUN]
    assert main([*args, f"out={tmp_path}"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert list(summary["tasks"]) == ["toy_lift_1"]


def test_unknown_reference_names_the_task(
    toy_source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["eval", f"suite.tasks=[lift_cube,{toy_source}push/0]", *RUN, f"out={tmp_path}"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "tasks[1]" in err and "toy:push/0" in err and "Traceback" not in err


def test_scene_validate(toy_source: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scene", "validate", f"{toy_source}lift/0", "lift_cube"]) == 0
    out = capsys.readouterr().out
    assert "ok: toy:lift/0 (toy_lift_0:" in out and "ok: lift_cube (lift_cube:" in out


def test_unregistered_prefix_is_an_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Without the source, `toy:` is nobody's prefix: exit 2, naming the known ones."""
    assert main(["scene", "validate", "toy:lift/0"]) == 2
    err = capsys.readouterr().err
    assert "no task source has the prefix 'toy:'" in err and "yaml:" in err


def test_gym_registration(toy_source: str) -> None:
    """Every task of a source's suites gets a gym id; the env loads it through the source."""
    import gymnasium as gym

    import metasim.envs

    ids = metasim.envs.register_builtin()
    assert "metasim/toy.lift-1-v0" in ids and "metasim/lift_cube-v0" in ids
    env = gym.make_vec("metasim/toy.lift-1-v0", num_envs=2, vectorization_mode="vector_entry_point")
    try:
        assert env.unwrapped.compiled.scene.name == "toy_lift_1"
        obs, _ = env.reset(seed=0)
        assert env.num_envs == 2
    finally:
        env.close()
        gym.registry.pop("metasim/toy.lift-0-v0", None)
        gym.registry.pop("metasim/toy.lift-1-v0", None)
