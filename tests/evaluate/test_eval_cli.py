"""`metasim eval` end to end: run folder contents, determinism, bad overrides."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from metasim.cli.main import main
from metasim.evaluate.config import compose
from metasim.evaluate.runner import run_eval

SMALL = ["suite=tabletop", "suite.tasks=[lift_cube]", "episodes=6"]


def _run(tmp_path, name, *extra):
    out = tmp_path / name
    code = main(["eval", "--quiet", *SMALL, f"out={out}", *extra])
    assert code == 0
    return out


def test_eval_writes_episodes_and_summary(tmp_path, capsys):
    out = _run(tmp_path, "run", "num_envs=4")
    table = pq.read_table(out / "episodes.parquet").to_pylist()
    assert len(table) == 6
    assert set(table[0]) == {
        "task",
        "episode",
        "seed",
        "success",
        "progress",
        "steps",
        "wall_time_s",
        "error",
        "cell",
        "factors",
    }
    assert [r["episode"] for r in table] == list(range(6))
    summary = json.loads((out / "summary.json").read_text())
    row = summary["tasks"]["lift_cube"]
    assert row["n"] == 6
    assert row["success_rate"] == sum(r["success"] for r in table) / 6
    lo, hi = row["ci95"]
    assert 0 <= lo <= row["success_rate"] <= hi <= 1
    assert summary["config"]["num_envs"] == 4
    assert "mujoco" in summary["versions"]
    printed = capsys.readouterr().out
    assert "lift_cube" in printed and "95% CI" in printed


def test_same_seed_same_results_whatever_num_envs(tmp_path):
    a = pq.read_table(_run(tmp_path, "a", "num_envs=3", "seed=4") / "episodes.parquet")
    b = pq.read_table(_run(tmp_path, "b", "num_envs=3", "seed=4") / "episodes.parquet")
    c = pq.read_table(_run(tmp_path, "c", "num_envs=1", "seed=4") / "episodes.parquet")
    cols = ["episode", "seed", "success", "progress", "steps"]
    assert a.select(cols).to_pylist() == b.select(cols).to_pylist()
    assert a.select(cols).to_pylist() == c.select(cols).to_pylist()
    d = pq.read_table(_run(tmp_path, "d", "num_envs=3", "seed=5") / "episodes.parquet")
    assert a.column("seed").to_pylist() != d.column("seed").to_pylist()


@pytest.mark.parametrize(
    "override, needle",
    [
        ("num_envs=0", "num_envs"),
        ("episodes=abc", "episodes"),
        ("suite=nope", "suite"),
        ("policy=nope", "policy"),
        ("nonsense=1", "nonsense"),
        ("suite.tasks=[no_such_scene]", "no_such_scene"),
        ("backend=bullet", "backend"),
    ],
)
def test_bad_overrides_exit_2_without_traceback(tmp_path, capsys, override, needle):
    code = main(["eval", "--quiet", override, f"out={tmp_path / 'x'}"])
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err and "Traceback" not in err


def test_compose_defaults():
    cfg = compose([])
    assert cfg.suite.name == "tabletop" and cfg.policy.kind == "scripted"
    assert len(cfg.task_files()) == len(cfg.suite.tasks)


def test_run_eval_api(tmp_path):
    cfg = compose([*SMALL, "episodes=2", "num_envs=2", f"out={tmp_path / 'api'}"])
    result = run_eval(cfg)
    assert len(result.records) == 2
    assert (result.run_dir / "summary.json").is_file()
