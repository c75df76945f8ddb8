"""The bootstrap over episodes behind `metasim compare`'s aggregates: paired draws keep
the two runs' covariance, unpaired ones none; point estimates are rliable's statistics on
the two runs' (1, tasks) score matrices."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.stats import iqm, mean, median, optimality_gap, probability_of_improvement
from metasim.stats.episode_bootstrap import (
    RateResamples,
    TaskOutcomes,
    compare_aggregates,
    resample_one,
    resample_rates,
)
from metasim.stats.paired import PairedTable

TABLES = [PairedTable(10, 2, 6, 12), PairedTable(20, 1, 4, 5), PairedTable(3, 0, 9, 18)]


def test_paired_draws_have_the_covariance_of_resampled_pairs() -> None:
    """Resampling n pairs: Var(rate_a) = p_a (1 - p_a) / n and Cov(rate_a, rate_b) =
    (p_ab - p_a p_b) / n, p_ab the share where both succeed. 40000 draws: within 5%."""
    tasks = [TaskOutcomes.paired(t) for t in TABLES]
    rs = resample_rates(tasks, reps=40_000, seed=1)
    for m, t in enumerate(TABLES):
        n = t.n
        pa, pb, pab = (t.a + t.b) / n, (t.a + t.c) / n, t.a / n
        cov = np.cov(rs.boot_a[:, m], rs.boot_b[:, m])
        assert cov[0, 0] == pytest.approx(pa * (1 - pa) / n, rel=0.05)
        assert cov[1, 1] == pytest.approx(pb * (1 - pb) / n, rel=0.05)
        assert cov[0, 1] == pytest.approx((pab - pa * pb) / n, rel=0.05)
        assert cov[0, 1] > 0  # these tables agree more than chance


def test_unpaired_draws_are_independent() -> None:
    tasks = [TaskOutcomes(t.a + t.b, t.n, t.a + t.c, t.n) for t in TABLES]
    rs = resample_rates(tasks, reps=40_000, seed=2)
    for m in range(len(TABLES)):
        assert abs(np.corrcoef(rs.boot_a[:, m], rs.boot_b[:, m])[0, 1]) < 0.03


def test_point_estimates_are_the_aggregates_of_the_score_matrices() -> None:
    rs = resample_rates([TaskOutcomes.paired(t) for t in TABLES], reps=200, seed=0)
    out = compare_aggregates(rs)
    a, b = rs.a[None, :], rs.b[None, :]  # (1, tasks): one run per checkpoint
    for side, mat in (("a", a), ("b", b)):
        assert out[side]["iqm"]["value"] == pytest.approx(iqm(mat), abs=1e-12)
        assert out[side]["optimality_gap"]["value"] == pytest.approx(optimality_gap(mat))
        assert out[side]["mean"]["value"] == pytest.approx(mean(mat), abs=1e-12)
        assert out[side]["median"]["value"] == pytest.approx(median(mat), abs=1e-12)
    poi = out["probability_of_improvement"]
    assert poi["value"] == pytest.approx(probability_of_improvement(b, a), abs=1e-12)
    assert out["iqm_diff"]["value"] == pytest.approx(iqm(b) - iqm(a), abs=1e-12)
    for entry in (poi, out["iqm_diff"], out["a"]["iqm"]):
        lo, hi = entry["ci95"]
        assert lo <= entry["value"] <= hi


def test_paired_interval_of_the_mean_difference_is_narrower() -> None:
    """Positively correlated runs: the paired bootstrap's interval for mean(B) - mean(A)
    is narrower than the unpaired one on the same counts."""
    paired = resample_rates([TaskOutcomes.paired(t) for t in TABLES], reps=4000, seed=3)
    unpaired = resample_rates(
        [TaskOutcomes(t.a + t.b, t.n, t.a + t.c, t.n) for t in TABLES], reps=4000, seed=3
    )

    def width(rs: RateResamples) -> float:
        d = rs.boot_b.mean(axis=1) - rs.boot_a.mean(axis=1)
        lo, hi = np.percentile(d, [2.5, 97.5])
        return float(hi - lo)

    assert width(paired) < 0.85 * width(unpaired)


def test_one_run_resample_and_empty_tasks() -> None:
    point, boot = resample_one([3, 0], [4, 0], reps=50, seed=0)
    assert point.tolist() == [0.75, 0.0] and boot.shape == (50, 2)
    assert set(np.unique(boot[:, 0])) <= {0.0, 0.25, 0.5, 0.75, 1.0}
    assert np.all(boot[:, 1] == 0.0)
    with pytest.raises(ValueError, match="no tasks"):
        resample_rates([])
