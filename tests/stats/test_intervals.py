from __future__ import annotations

import pytest
from scipy import stats

from metasim.stats import success_interval


def test_wilson_matches_the_textbook_value():
    lo, hi = success_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4)
    assert hi == pytest.approx(0.9433, abs=1e-4)


def test_beta_posterior_interval():
    lo, hi = success_interval(7, 20, method="beta")
    assert lo == pytest.approx(stats.beta.ppf(0.025, 8, 14))
    assert hi == pytest.approx(stats.beta.ppf(0.975, 8, 14))


@pytest.mark.parametrize("k,n", [(0, 10), (10, 10), (0, 1), (3, 7)])
def test_bounds_contain_the_rate(k, n):
    lo, hi = success_interval(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    if k == 0:
        assert lo == 0.0
    if k == n:
        assert hi == 1.0


def test_wider_at_higher_level_and_narrower_with_more_data():
    a = success_interval(5, 10, level=0.9)
    b = success_interval(5, 10, level=0.99)
    c = success_interval(50, 100)
    assert b[1] - b[0] > a[1] - a[0]
    assert c[1] - c[0] < success_interval(5, 10)[1] - success_interval(5, 10)[0]


def test_bad_arguments():
    assert success_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        success_interval(5, 3)
    with pytest.raises(ValueError):
        success_interval(1, 3, method="nope")  # type: ignore[arg-type]


def test_vectorized_intervals_broadcast_and_edge_cases():
    from metasim.stats.intervals import success_intervals

    lo, hi = success_intervals([0, 3, 5], 5)
    assert lo.shape == hi.shape == (3,)
    assert (lo[0], hi[2]) == (0.0, 1.0)
    assert (float(lo[1]), float(hi[1])) == success_interval(3, 5)
    lo, hi = success_intervals(0, [0, 10], method="beta")
    assert (lo[0], hi[0]) == (0.0, 1.0)
    with pytest.raises(ValueError):
        success_intervals([1, 6], 5)
    with pytest.raises(ValueError):
        success_intervals(1, 5, level=1.5)
