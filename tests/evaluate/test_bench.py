"""The physics benchmark runs and reports a ratio (figures are quoted, never asserted)."""

from __future__ import annotations

import json

from metasim.bench.physics import bench_physics
from metasim.cli.main import main
from metasim.paths import SCENES


def test_bench_physics_reports_both_rates(lift_scene):
    result = bench_physics(str(SCENES / "lift_cube.yaml"), num_envs=2, steps=20, repeats=1)
    for key in ("eval_env_steps_per_s", "rollout_physics_steps_per_s", "ratio", "substeps"):
        assert result[key] > 0
    expected = result["eval_env_steps_per_s"] * result["substeps"]
    assert abs(result["eval_physics_steps_per_s"] - expected) < 0.01 * expected


def test_bench_cli_prints_json(capsys):
    assert main(["bench", "physics", "--num-envs", "2", "--steps", "10", "--repeats", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["num_envs"] == 2 and "ratio" in out


def test_bench_cli_rejects_bad_numbers(capsys):
    assert main(["bench", "physics", "--num-envs", "0"]) == 2
    assert "num-envs" in capsys.readouterr().err


def test_bench_physics_reports_each_repeats_ratio_and_the_spread() -> None:
    out = bench_physics(str(SCENES / "lift_cube.yaml"), num_envs=2, steps=5, repeats=3)
    runs, (lo, hi) = out["ratio_runs"], out["ratio_spread"]
    assert len(runs) == 3 and lo == min(runs) and hi == max(runs)
    # each repeat's loop and rollout bound the ratio of the medians (order statistics)
    assert lo - 0.002 <= out["ratio"] <= hi + 0.002
