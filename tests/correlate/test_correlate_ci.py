"""Bootstrap intervals of a study: they hold the truth about as often as they claim."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.correlate import BootstrapSpec, Entry, Study, analyze, mmrv, pearson

TRUE_SIM = np.linspace(0.1, 0.9, 8)
TRUE_REAL = np.clip(TRUE_SIM + np.array([0.05, -0.1, 0.1, -0.05, 0.08, -0.08, 0.02, -0.02]), 0, 1)


def _observed(rng: np.random.Generator, n: int, task: str = "t") -> list[Entry]:
    sim = rng.binomial(n, TRUE_SIM) / n
    real = rng.binomial(n, TRUE_REAL) / n
    return [
        Entry(task, f"p{i}", float(s), float(r), n, n)
        for i, (s, r) in enumerate(zip(sim, real, strict=True))
    ]


def test_interval_holds_the_estimate_and_states_its_method():
    study = Study("mem", _observed(np.random.default_rng(0), 50))
    result = analyze(study, BootstrapSpec(reps=300, seed=1))
    row = result["tasks"]["t"]
    for name in ("pearson", "spearman", "kendall", "mmrv"):
        lo, hi = row["ci95"][name]
        assert lo <= hi
        assert row["valid_reps"][name] > 250
    assert row["ci95"]["pearson"][0] <= row["pearson"] <= row["ci95"]["pearson"][1]
    method = result["method"]
    assert method["reps"] == 300 and method["seed"] == 1
    assert "Binomial" in method["resampling"]
    assert method["episode_counts_known"] == {"sim": "8 of 8", "real": "8 of 8"}


def test_same_seed_same_intervals():
    study = Study("mem", _observed(np.random.default_rng(0), 50))
    a = analyze(study, BootstrapSpec(reps=200, seed=4))
    b = analyze(study, BootstrapSpec(reps=200, seed=4))
    assert a == b


def test_fewer_episodes_give_wider_intervals():
    """The binomial redraw widens intervals when rates rest on few episodes."""
    base = _observed(np.random.default_rng(2), 20)
    few = Study("few", base)
    many = Study("many", [Entry(e.task, e.policy, e.sim, e.real, 10_000, 10_000) for e in base])
    unknown = Study("unknown", [Entry(e.task, e.policy, e.sim, e.real) for e in base])

    def width(study: Study) -> float:
        lo, hi = analyze(study, BootstrapSpec(reps=400, seed=0))["tasks"]["t"]["ci95"]["pearson"]
        return hi - lo

    assert width(few) > 1.2 * width(many)
    assert width(many) == pytest.approx(width(unknown), rel=0.2)


def test_coverage_of_true_pearson_and_mmrv():
    """Over repeated studies, the 95% intervals hold the true value in most of them."""
    rng = np.random.default_rng(7)
    truth_r = pearson(TRUE_SIM, TRUE_REAL)
    truth_m = mmrv(sim=TRUE_SIM, real=TRUE_REAL)
    hits_r = hits_m = 0
    widths: list[float] = []
    trials = 40
    for t in range(trials):
        study = Study("mem", _observed(rng, 60))
        row = analyze(study, BootstrapSpec(reps=300, seed=t))["tasks"]["t"]
        lo, hi = row["ci95"]["pearson"]
        hits_r += lo <= truth_r <= hi
        widths.append(hi - lo)
        lo, hi = row["ci95"]["mmrv"]
        hits_m += lo <= truth_m <= hi
    assert hits_r / trials >= 0.8
    assert hits_m / trials >= 0.8
    assert np.mean(widths) < 0.5  # Informative, not covering by being as wide as [-1, 1].


def test_pooled_and_single_policy_task():
    entries = _observed(np.random.default_rng(1), 30, "a") + _observed(
        np.random.default_rng(2), 30, "b"
    )
    entries.append(Entry("solo", "p0", 0.5, 0.4, 10, 10))
    result = analyze(Study("mem", entries), BootstrapSpec(reps=200))
    solo = result["tasks"]["solo"]
    assert solo["n_policies"] == 1 and solo["pearson"] is None and solo["ci95"]["mmrv"] is None
    assert any("solo" in w for w in result["warnings"])
    pooled = result["pooled"]
    assert pooled["n_points"] == 16 and pooled["n_tasks"] == 2
    a, b = result["tasks"]["a"]["pearson"], result["tasks"]["b"]["pearson"]
    assert pooled["mean_over_tasks"]["pearson"] == pytest.approx((a + b) / 2)
    lo, hi = pooled["ci95"]["pearson"]
    assert lo <= pooled["pearson"] <= hi
