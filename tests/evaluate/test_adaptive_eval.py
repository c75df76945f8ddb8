"""Adaptive evaluation: a cell stops once its 95% interval is narrow enough."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from metasim.cli.main import main
from metasim.stats import success_interval

pytestmark = pytest.mark.slow


def test_adaptive_stops_early_and_reports_savings(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "name: g\ndesign: ofat\nfactors:\n  - {name: lat, axis: action_latency, levels: [0, 3]}\n"
    )
    out = tmp_path / "run"
    args = ["eval", "--quiet", "suite.tasks=[lift_cube]", "episodes=80", "num_envs=8"]
    extra = ["adaptive=true", "adaptive_width=0.3", "adaptive_min=10", f"perturbation={grid}"]
    assert main([*args, *extra, f"out={out}"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    info = summary["adaptive"]
    nominal = info["cells"]["lift_cube"]["nominal"]
    # The expert never fails nominally: the interval is narrow after few episodes.
    assert nominal["episodes"] < 80 and nominal["saved"] == 80 - nominal["episodes"]
    assert info["episodes_saved"] == sum(c["saved"] for c in info["cells"]["lift_cube"].values())
    rows = pq.read_table(out / "episodes.parquet").to_pylist()
    for cell, used in ((c, v["episodes"]) for c, v in info["cells"]["lift_cube"].items()):
        mine = [r for r in rows if r["cell"] == cell]
        assert sorted(r["episode"] for r in mine) == list(range(used))
        k = sum(r["success"] for r in mine)
        lo, hi = success_interval(k, used)
        assert hi - lo <= 0.3 or used == 80
        if used > 10:  # it would have stopped one block earlier if that had been enough
            k_prev = sum(r["success"] for r in mine if r["episode"] < used - 8)
            lo, hi = success_interval(k_prev, used - 8)
            assert hi - lo > 0.3
