"""Hand-computed cases for the rliable-style aggregates and the stratified bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from metasim.stats import (
    aggregate_summary,
    iqm,
    mean,
    median,
    optimality_gap,
    performance_profile,
    probability_of_improvement,
    probability_of_improvement_ci,
    stratified_bootstrap_bands,
    stratified_bootstrap_ci,
)
from metasim.stats.aggregates import bootstrap_distribution, stratified_resample


def test_iqm_is_the_pooled_25_percent_trimmed_mean():
    scores = np.arange(1.0, 9.0).reshape(4, 2)  # 1..8: trimming 2 each side leaves 3..6
    assert iqm(scores) == 4.5
    scores = np.array([[100.0, 0.0], [1.0, 2.0], [3.0, -50.0], [4.0, 5.0]])
    assert iqm(scores) == pytest.approx(np.mean([1.0, 2.0, 3.0, 4.0]))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, 5))
    assert iqm(x) == stats.trim_mean(x.reshape(-1), 0.25)


def test_mean_and_median_are_over_per_task_means():
    scores = np.array([[0.0, 1.0, 10.0], [2.0, 3.0, 10.0]])  # task means 1, 2, 10
    assert mean(scores) == pytest.approx(13 / 3)
    assert median(scores) == 2.0


def test_optimality_gap_clips_at_gamma():
    scores = np.array([[0.5, 1.2], [0.9, 0.2]])  # clipped: 0.5, 1, 0.9, 0.2 -> mean 0.65
    assert optimality_gap(scores) == pytest.approx(0.35)
    assert optimality_gap(scores, gamma=0.5) == pytest.approx(0.5 - 0.425)
    assert optimality_gap(np.ones((3, 2))) == 0.0


def test_probability_of_improvement_counts_ties_as_half():
    x = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    y = np.array([[2.0, 1.0], [2.0, 1.0]])
    # Task 0: pairs (1,2)x2 lose, (2,2)x2 tie, (3,2)x2 win -> (0 + 1 + 2) / 6 = 0.5.
    # Task 1: x always below y -> 0.
    assert probability_of_improvement(x, y) == pytest.approx(0.25)
    assert probability_of_improvement(y, x) == pytest.approx(0.75)
    assert probability_of_improvement(x, x) == 0.5


def test_probability_of_improvement_matches_mann_whitney_u():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, size=(6, 4)).astype(float)  # many ties
    y = rng.integers(0, 4, size=(9, 4)).astype(float)
    u = [stats.mannwhitneyu(x[:, m], y[:, m]).statistic / (6 * 9) for m in range(4)]
    assert probability_of_improvement(x, y) == pytest.approx(np.mean(u), abs=1e-12)


def test_performance_profile_counts_scores_strictly_above_tau():
    scores = np.array([[0.1, 0.5], [0.9, 0.3]])
    prof = performance_profile(scores, [0.0, 0.3, 0.5, 1.0], reps=200)
    np.testing.assert_allclose(prof.fraction, [1.0, 0.5, 0.25, 0.0])
    assert np.all(prof.low <= prof.fraction + 1e-12)
    assert np.all(prof.fraction <= prof.high + 1e-12)
    assert prof.low[0] == prof.high[0] == 1.0  # every resample is above 0
    assert prof.low[-1] == prof.high[-1] == 0.0


def test_resampling_stays_within_each_task():
    # Task m holds values in [10 m, 10 m + 1): a resample must keep each column in its range.
    rng = np.random.default_rng(0)
    scores = 10.0 * np.arange(4)[None, :] + rng.random((6, 4))
    for _ in range(50):
        draw = stratified_resample(scores, rng)
        for m in range(4):
            assert set(draw[:, m]) <= set(scores[:, m])


def test_bootstrap_variance_of_the_mean_is_the_stratified_one():
    # For the mean, the stratified bootstrap variance is (1/M²) Σ_m s²_m / N (plug-in s²).
    # Columns are strongly correlated, so resampling whole rows would give a different
    # (larger) variance; this pins the resampled axis.
    rng = np.random.default_rng(1)
    base = rng.normal(size=(8, 1))
    scores = base + 0.3 * rng.normal(size=(8, 5))
    boot = bootstrap_distribution(scores, mean, reps=20_000, seed=2)
    expected = np.sum(np.var(scores, axis=0)) / (5**2 * 8)
    assert boot.var() == pytest.approx(expected, rel=0.05)
    row_var = np.var(scores.mean(axis=1)) / 8
    assert row_var > 3 * expected


def test_two_run_bootstrap_percentiles_by_hand():
    # N = 2, one task, scores 0 and 1: the resampled mean is 0, 1/2, 1 w.p. 1/4, 1/2, 1/4.
    est, lo, hi = stratified_bootstrap_ci(np.array([[0.0], [1.0]]), mean, reps=4000)
    assert (est, lo, hi) == (0.5, 0.0, 1.0)


def test_bootstrap_ci_is_seeded_and_basic_reflects_percentile():
    rng = np.random.default_rng(5)
    scores = rng.random((10, 3))
    a = stratified_bootstrap_ci(scores, iqm, reps=500, seed=7)
    assert a == stratified_bootstrap_ci(scores, iqm, reps=500, seed=7)
    assert a != stratified_bootstrap_ci(scores, iqm, reps=500, seed=8)
    assert a.low <= a.estimate <= a.high
    b = stratified_bootstrap_ci(scores, iqm, reps=500, seed=7, method="basic")
    assert b.low == pytest.approx(2 * a.estimate - a.high)
    assert b.high == pytest.approx(2 * a.estimate - a.low)
    wide = stratified_bootstrap_ci(scores, iqm, reps=500, seed=7, level=0.99)
    assert wide.low <= a.low and a.high <= wide.high


def test_constant_tasks_give_a_zero_width_interval():
    scores = np.tile([0.2, 0.7, 0.9], (5, 1))
    assert stratified_bootstrap_ci(scores, iqm, reps=100) == (iqm(scores),) * 3


def test_bands_for_a_vector_statistic():
    rng = np.random.default_rng(0)
    scores = rng.random((6, 4))
    bands = stratified_bootstrap_bands(scores, lambda s: s.mean(axis=0), reps=300)
    assert bands.estimate.shape == bands.low.shape == bands.high.shape == (4,)
    assert np.all(bands.low <= bands.high)
    with pytest.raises(ValueError, match="scalar"):
        stratified_bootstrap_ci(scores, lambda s: s.mean(axis=0), reps=10)  # type: ignore[arg-type,return-value]


def test_probability_of_improvement_ci():
    rng = np.random.default_rng(0)
    x = rng.random((10, 4)) + 0.3
    y = rng.random((7, 4))
    est, lo, hi = probability_of_improvement_ci(x, y, reps=500)
    assert est == probability_of_improvement(x, y)
    assert 0.5 < lo <= est <= hi <= 1.0


def test_aggregate_summary_shape():
    rng = np.random.default_rng(0)
    out = aggregate_summary(rng.random((5, 3)), reps=100)
    assert set(out) == {"mean", "median", "iqm", "optimality_gap"}
    for row in out.values():
        assert row["low"] <= row["value"] <= row["high"]


@pytest.mark.parametrize(
    "bad", [np.zeros(3), np.zeros((0, 2)), np.array([[np.nan, 1.0]]), np.zeros((2, 2, 2))]
)
def test_bad_score_matrices(bad):
    with pytest.raises(ValueError):
        iqm(bad)


def test_mismatched_tasks_and_unknown_method():
    with pytest.raises(ValueError, match="same tasks"):
        probability_of_improvement(np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="bootstrap method"):
        stratified_bootstrap_ci(np.zeros((2, 2)), mean, reps=5, method="bca")  # type: ignore[arg-type]


@pytest.mark.parametrize("stat", [iqm, mean, median, optimality_gap])
def test_vectorized_and_generic_bootstrap_paths_agree(stat):
    # The library's statistics run batched; a lambda wrapping them takes the generic path.
    # Same draws, so the distributions agree to rounding.
    rng = np.random.default_rng(4)
    for shape in [(9, 4), (60, 200)]:  # one chunk of resamples; several chunks
        scores = rng.random(shape)
        fast = bootstrap_distribution(scores, stat, reps=300, seed=3)
        slow = bootstrap_distribution(scores, lambda s: stat(s), reps=300, seed=3)
        np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-12)


def test_iqm_against_scipy_on_many_shapes():
    rng = np.random.default_rng(9)
    for shape in [(1, 1), (1, 3), (3, 1), (5, 7), (10, 10), (13, 3)]:
        x = rng.normal(size=shape)
        assert iqm(x) == pytest.approx(stats.trim_mean(x.reshape(-1), 0.25), abs=1e-12)
