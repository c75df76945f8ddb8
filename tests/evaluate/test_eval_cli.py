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


@pytest.mark.slow
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
    assert len(cfg.tasks()) == len(cfg.suite.tasks)


def test_run_eval_api(tmp_path):
    cfg = compose([*SMALL, "episodes=2", "num_envs=2", f"out={tmp_path / 'api'}"])
    result = run_eval(cfg)
    assert len(result.records) == 2
    assert (result.run_dir / "summary.json").is_file()


@pytest.mark.slow
def test_summary_has_aggregate_and_sensitivity(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "name: g\ndesign: ofat\nfactors:\n"
        "  - {name: lat, axis: action_latency, levels: [0, 8]}\n"
        "  - {name: tint, axis: object_color, levels: [red, [0.1, 0.9, 0.1, 1.0]]}\n"
    )
    out = tmp_path / "run"
    args = ["eval", "--quiet", "suite.tasks=[lift_cube,lift_cylinder]", "episodes=4"]
    assert main([*args, f"perturbation={grid}", f"out={out}"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    agg = summary["aggregate"]
    for name in ("mean", "iqm", "median", "optimality_gap"):
        lo, hi = agg[name]["ci95"]
        assert lo <= agg[name]["value"] <= hi
    sens = summary["sensitivity"]
    assert list(sens) == ["lat", "tint"]  # worst first: a long latency hurts the expert
    assert sens["lat"]["effect"] < 0 and sens["lat"]["worst_level"] == "8"
    assert set(summary["sensitivity_by_task"]) == {"lift_cube", "lift_cylinder"}
