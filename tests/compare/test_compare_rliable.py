"""`metasim compare`'s aggregates against rliable 1.2.0 itself (its own virtualenv, as in
tests/stats/test_rliable_agreement.py, skipped with the reason when it cannot be built).

On the score matrices of two real runs (each run's per-task rates, a (1, tasks) matrix):
IQM, optimality gap, mean, median and the probability of improvement equal rliable's to
1e-12. The interval of A's mean comes from resampling episodes within each task, which is
rliable's stratified bootstrap of the (episodes, tasks) outcome matrix with
`aggregate_mean`: the endpoints agree within Monte Carlo error."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from metasim.compare import compare_runs, pair_runs
from metasim.compare.analysis import task_outcomes
from metasim.report.data import load_run
from metasim.stats.aggregates import interval_from_distribution
from metasim.stats.episode_bootstrap import resample_rates
from tests.stats.test_rliable_agreement import SCRIPT, _tolerance, rliable_python

pytestmark = pytest.mark.reference

REPS = 5000
__all__ = ["rliable_python"]  # the fixture, imported for the tests below


def reference(python: Path, job: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run(
        [str(python), str(SCRIPT), json.dumps({"seed": 0, **job})],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dict(json.loads(proc.stdout))


@pytest.fixture(scope="module")
def pair(runs: dict[str, Path]) -> dict[str, Any]:
    a, b = load_run(runs["expert"]), load_run(runs["jitter10"])
    p = pair_runs(a, b)
    tables = [t.table for t in task_outcomes(p).values()]
    # A's outcomes as an (episodes, tasks) 0/1 matrix; every task has the same pairs.
    outcomes = np.array(
        [[float(x.success) for x, _ in p.pairs[t]] for t in p.tasks], dtype=np.float64
    ).T
    result = compare_runs([runs["expert"], runs["jitter10"]], reps=REPS, seed=7)
    return {"result": result, "tables": tables, "outcomes": outcomes}


def test_point_estimates_equal_rliable(rliable_python: Path, pair: dict[str, Any]) -> None:
    agg = pair["result"]["aggregate"]
    rates = {s: [e[s]["rate"] for e in pair["result"]["tasks"].values()] for s in ("a", "b")}
    for side in ("a", "b"):
        ref = reference(
            rliable_python,
            {"kind": "matrix", "scores": [rates[side]], "taus": [0.5], "reps": 10},
        )
        for name in ("iqm", "optimality_gap", "mean", "median"):
            assert agg[side][name]["value"] == pytest.approx(ref[name], abs=1e-12, rel=0)
    ref = reference(
        rliable_python, {"kind": "pair", "x": [rates["b"]], "y": [rates["a"]], "reps": 10}
    )
    poi = agg["probability_of_improvement"]["value"]
    assert poi == pytest.approx(ref["poi"], abs=1e-12, rel=0)


def test_mean_interval_matches_rliables_bootstrap_of_episodes(
    rliable_python: Path, pair: dict[str, Any]
) -> None:
    outcomes = pair["outcomes"]
    ref = reference(
        rliable_python,
        {"kind": "matrix", "scores": outcomes.tolist(), "taus": [0.5], "reps": REPS},
    )
    from metasim.stats.episode_bootstrap import TaskOutcomes

    rs = resample_rates([TaskOutcomes.paired(t) for t in pair["tables"]], reps=REPS, seed=7)
    boot = rs.boot_a.mean(axis=1)
    estimate = pair["result"]["aggregate"]["a"]["mean"]["value"]
    assert estimate == pytest.approx(ref["mean"], abs=1e-12)
    lo, hi = interval_from_distribution(boot, estimate)
    ours = np.array([lo, hi])
    assert ours.tolist() == pytest.approx(pair["result"]["aggregate"]["a"]["mean"]["ci95"])
    tol = _tolerance(boot, ours)
    assert np.all(np.abs(ours - np.asarray(ref["mean_ci"]["ci"])) <= tol), (ours, ref, tol)
