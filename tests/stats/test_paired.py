"""Newcombe's interval for the difference of two PAIRED success rates (method 10)."""

from __future__ import annotations

import math

import pytest

from metasim.stats.paired import PairedTable, paired_difference_interval
from metasim.stats.sensitivity import newcombe_interval

Z = 1.959963984540054  # the standard normal's 97.5% quantile


def test_table_counts_the_four_kinds_of_pairs() -> None:
    first = [True, True, False, False, True]
    second = [True, False, True, False, False]
    assert PairedTable.of(first, second) == PairedTable(a=1, b=2, c=1, d=1)
    with pytest.raises(ValueError, match="equal lengths"):
        PairedTable.of([True], [True, False])


def test_hand_computed_case() -> None:
    """(a, b, c, d) = (0, 2, 0, 2): p1 = 1/2, p2 = 0, D = 1/2; a margin (a + c) is empty,
    so phi = 0. Wilson 2/4: centre 1/2, half-width z sqrt(1 + z²/4) / (4 + z²) = 0.34996;
    Wilson 0/4: (0, z² / (4 + z²)) = (0, 0.48989). Lower: 1/2 - sqrt(0.34996² + 0.48989²)
    = -0.10205; upper: 1/2 + sqrt(0.34996² + 0²) = 0.84996."""
    half = Z * math.sqrt(1 + Z * Z / 4) / (4 + Z * Z)
    u2 = Z * Z / (4 + Z * Z)
    lo, hi = paired_difference_interval(PairedTable(0, 2, 0, 2))
    assert lo == pytest.approx(0.5 - math.hypot(half, u2), abs=1e-9)
    assert hi == pytest.approx(0.5 + half, abs=1e-9)
    assert (lo, hi) == pytest.approx((-0.10205, 0.84996), abs=1e-5)


def _wilson(k: int, n: int) -> tuple[float, float]:
    centre = (k + Z * Z / 2) / (n + Z * Z)
    half = Z * math.sqrt(k * (n - k) / n + Z * Z / 4) / (n + Z * Z)
    return centre - half, centre + half


def test_correlated_table_uses_phi() -> None:
    """Newcombe's example table (12, 9, 2, 21), n = 44: phi = (12*21 - 9*2) /
    sqrt(21 * 23 * 14 * 30) = 0.51954; delta and epsilon from the module doc's formulas
    with the Wilson limits computed here from their closed form."""
    table = PairedTable(12, 9, 2, 21)
    phi = (12 * 21 - 9 * 2) / math.sqrt(21 * 23 * 14 * 30)
    assert table.phi() == pytest.approx(phi) and phi == pytest.approx(0.51954, abs=1e-5)
    p1, p2 = 21 / 44, 14 / 44
    (l1, u1), (l2, u2) = _wilson(21, 44), _wilson(14, 44)
    delta = math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    eps = math.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    lo, hi = paired_difference_interval(table)
    assert (lo, hi) == pytest.approx((7 / 44 - delta, 7 / 44 + eps), abs=1e-12)
    assert (lo, hi) == pytest.approx((0.01821, 0.28916), abs=1e-5)
    # Pairing narrows the interval against the independent-samples one of the same rates.
    ind_lo, ind_hi = newcombe_interval(21, 44, 14, 44)
    assert hi - lo < ind_hi - ind_lo


def test_uncorrelated_table_is_the_independent_interval() -> None:
    """With phi = 0 method 10 reduces to Newcombe's hybrid score interval for
    independent samples; swapping the two sides negates the interval."""
    table = PairedTable(3, 3, 2, 2)  # ad - bc = 0
    assert table.phi() == 0.0
    assert paired_difference_interval(table) == pytest.approx(newcombe_interval(6, 10, 5, 10))
    lo, hi = paired_difference_interval(PairedTable(12, 9, 2, 21))
    assert paired_difference_interval(PairedTable(12, 2, 9, 21)) == pytest.approx((-hi, -lo))


def test_edge_cases() -> None:
    assert paired_difference_interval(PairedTable(0, 0, 0, 0)) == (-1.0, 1.0)
    lo, hi = paired_difference_interval(PairedTable(10, 0, 0, 0))  # all agree
    assert lo < 0.0 < hi and -1.0 <= lo and hi <= 1.0
    lo, hi = paired_difference_interval(PairedTable(0, 10, 0, 0))  # all disagree one way
    assert 0.0 < lo < hi == 1.0
