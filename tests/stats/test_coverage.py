"""Coverage of the 95% success intervals over the grid the issue names.

For a given (p, n) the coverage of an interval method is exact: the sum of the
Binomial(n, p) pmf over the k whose interval contains p. No Monte Carlo is needed; a small
simulation below checks that the exact number is what simulated trials give.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from metasim.stats import success_interval
from metasim.stats.intervals import success_intervals

P_GRID = np.round(np.arange(0.05, 0.9501, 0.01), 2)  # 91 values
N_GRID = np.arange(10, 201)  # every n from 10 to 200


def interval_table(n: int, method: str) -> np.ndarray:
    """Intervals for k = 0..n, shape (n + 1, 2)."""
    lo, hi = success_intervals(np.arange(n + 1), n, 0.95, method)  # type: ignore[arg-type]
    return np.stack([lo, hi], axis=1)


def exact_coverage(n: int, ps: np.ndarray, method: str) -> np.ndarray:
    """Exact coverage probability for each p in ``ps`` at this n, shape (len(ps),)."""
    table = interval_table(n, method)
    k = np.arange(n + 1)
    pmf = stats.binom.pmf(k[None, :], n, ps[:, None])  # (P, n + 1)
    covers = (table[None, :, 0] <= ps[:, None]) & (ps[:, None] <= table[None, :, 1])
    return np.sum(pmf * covers, axis=1)


@pytest.mark.parametrize("method", ["wilson", "beta"])
def test_average_coverage_over_the_grid_is_95_percent(method):
    grid = np.stack([exact_coverage(int(n), P_GRID, method) for n in N_GRID], axis=1)
    assert grid.shape == (len(P_GRID), len(N_GRID))
    average = float(grid.mean())
    # The requirement: the grid average lies in 94–96%.
    assert 0.94 <= average <= 0.96, average
    # Individual cells oscillate (binomial discreteness) but never collapse.
    assert grid.min() > 0.85
    # Away from the edges (0.2 <= p <= 0.8, n >= 50) every cell is within 92.5–97.5%.
    inner = grid[(P_GRID >= 0.2) & (P_GRID <= 0.8)][:, N_GRID >= 50]
    assert 0.925 < inner.min() and inner.max() < 0.975


@pytest.mark.parametrize("method", ["wilson", "beta"])
def test_vectorized_table_equals_the_scalar_function(method):
    for n in (10, 57, 200):
        expected = [success_interval(k, n, 0.95, method) for k in range(n + 1)]
        np.testing.assert_array_equal(interval_table(n, method), np.array(expected))


@pytest.mark.parametrize("method", ["wilson", "beta"])
@pytest.mark.parametrize("p,n", [(0.05, 10), (0.5, 37), (0.9, 120)])
def test_simulated_trials_agree_with_the_exact_coverage(method, p, n):
    trials = 20_000
    rng = np.random.default_rng(1234)
    ks = rng.binomial(n, p, size=trials)
    table = interval_table(n, method)
    simulated = float(np.mean((table[ks, 0] <= p) & (p <= table[ks, 1])))
    exact = float(exact_coverage(n, np.array([p]), method)[0])
    se = np.sqrt(exact * (1 - exact) / trials)
    assert abs(simulated - exact) < 4 * se + 1e-12
