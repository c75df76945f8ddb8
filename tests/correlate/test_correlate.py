"""Pearson, Spearman, Kendall τ-b and MMRV against hand-computed cases and scipy.stats."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from metasim.correlate import kendall, mmrv, pearson, spearman
from metasim.correlate.metrics import batch_metrics

# Ties in x (0.2 twice): hand-computed below.
X_TIES = [0.1, 0.2, 0.2, 0.4]
Y_TIES = [0.3, 0.1, 0.5, 0.6]


def simpler_mmrv(sim: list[float], real: list[float]) -> float:
    """SIMPLER's loop, written out: the reference the vectorized version must match."""
    total = 0.0
    for i in range(len(sim)):
        worst = 0.0
        for j in range(len(sim)):
            if (sim[i] > sim[j]) != (real[i] > real[j]):
                worst = max(worst, abs(real[i] - real[j]))
        total += worst
    return total / len(sim)


def test_pearson_hand_computed():
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # dx = dy-permuted (-1.5, -0.5, 0.5, 1.5): Σ dx·dy = 4, Σ dx² = Σ dy² = 5.
    assert pearson([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)


def test_pearson_undefined_is_nan():
    assert math.isnan(pearson([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]))
    assert math.isnan(pearson([0.5], [0.1]))


def test_spearman_with_ties_hand_computed():
    # Ranks x = (1, 2.5, 2.5, 4), y = (2, 1, 3, 4): Σ dx·dy = 3, Σ dx² = 4.5, Σ dy² = 5.
    assert spearman(X_TIES, Y_TIES) == pytest.approx(3 / math.sqrt(22.5))
    assert spearman([0.1, 0.2, 0.9], [0.0, 0.5, 0.6]) == pytest.approx(1.0)
    assert spearman([0.1, 0.2, 0.9], [0.6, 0.5, 0.0]) == pytest.approx(-1.0)


def test_kendall_tau_b_with_ties_hand_computed():
    # 6 pairs: 4 concordant, 1 discordant, 1 tied in x only: (4 − 1) / sqrt(5 · 6).
    assert kendall(X_TIES, Y_TIES) == pytest.approx(3 / math.sqrt(30))
    assert kendall([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert kendall([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # Tied in both x and y: that pair counts in both tie totals, so τ-b stays 1.
    assert kendall([1, 1, 2], [5, 5, 7]) == pytest.approx(1.0)
    assert math.isnan(kendall([1, 1, 1], [1, 2, 3]))


@pytest.mark.parametrize("seed", range(5))
def test_correlations_match_scipy(seed):
    rng = np.random.default_rng(seed)
    # Rates that are multiples of 0.1 give plenty of ties.
    x = rng.integers(0, 11, size=9) / 10
    y = np.clip(x + rng.integers(-3, 4, size=9) / 10, 0, 1)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert kendall(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)


def test_mmrv_hand_computed():
    assert mmrv(sim=[0.1, 0.5, 0.9], real=[0.2, 0.3, 0.8]) == 0.0  # same order
    # Reversed order: policy 0 and 2 are each violated by 0.8, policy 1 by 0.4.
    assert mmrv(sim=[0.1, 0.5, 0.9], real=[0.9, 0.5, 0.1]) == pytest.approx(2.0 / 3)
    # A tie in sim against a real gap: only policy 1 (R_1 > R_0, S_1 = S_0) is violated.
    assert mmrv(sim=[0.5, 0.5], real=[0.2, 0.6]) == pytest.approx(0.2)
    # Ties on both sides agree: no violation.
    assert mmrv(sim=[0.5, 0.5], real=[0.3, 0.3]) == 0.0


def test_mmrv_argument_order_matters():
    sim, real = [0.1, 0.2], [0.9, 0.3]
    # Both policies swap places; the violation is weighted by the real gap 0.6 ...
    assert mmrv(sim=sim, real=real) == pytest.approx(0.6)
    # ... and, with the arguments swapped, by the sim gap 0.1.
    assert mmrv(sim=real, real=sim) == pytest.approx(0.1)


def test_mmrv_is_keyword_only():
    with pytest.raises(TypeError):
        mmrv([0.1, 0.2], [0.3, 0.4])  # type: ignore[misc]


@pytest.mark.parametrize("seed", range(5))
def test_mmrv_matches_simpler_loop(seed):
    rng = np.random.default_rng(seed)
    sim = list(rng.integers(0, 11, size=7) / 10)
    real = list(rng.integers(0, 11, size=7) / 10)
    assert mmrv(sim=sim, real=real) == pytest.approx(simpler_mmrv(sim, real))


def test_batched_metrics_equal_one_by_one():
    rng = np.random.default_rng(3)
    sim = rng.integers(0, 5, size=(6, 5)) / 4
    real = rng.integers(0, 5, size=(6, 5)) / 4
    batch = batch_metrics(sim, real)
    for b in range(6):
        np.testing.assert_allclose(batch["pearson"][b], pearson(sim[b], real[b]), equal_nan=True)
        np.testing.assert_allclose(batch["spearman"][b], spearman(sim[b], real[b]), equal_nan=True)
        np.testing.assert_allclose(batch["kendall"][b], kendall(sim[b], real[b]), equal_nan=True)
        assert batch["mmrv"][b] == pytest.approx(mmrv(sim=sim[b], real=real[b]))


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="one shape"):
        pearson([0.1, 0.2], [0.1, 0.2, 0.3])
