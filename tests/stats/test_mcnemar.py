"""McNemar's exact test of a paired table: the two-sided binomial test of the discordant
counts, checked against scipy and against a brute-force enumeration of every way the
discordant pairs could have split."""

from __future__ import annotations

import itertools

import pytest
from scipy import stats

from metasim.stats.paired import EXACT_MAX, PairedTable, mcnemar_exact_p


def brute_force_p(b: int, c: int) -> float:
    """Enumerate all 2^m sign patterns of the m = b + c discordant pairs (each equally
    likely under the null) and sum those whose split is at least as unbalanced."""
    m = b + c
    observed = abs(b - c)
    extreme = sum(
        1 for signs in itertools.product((0, 1), repeat=m) if abs(2 * sum(signs) - m) >= observed
    )
    return extreme / 2**m


@pytest.mark.parametrize("b, c", [(0, 0), (1, 0), (0, 5), (3, 3), (7, 2), (2, 9), (6, 8)])
def test_matches_brute_force_and_scipy(b: int, c: int) -> None:
    table = PairedTable(a=4, b=b, c=c, d=5)
    p = mcnemar_exact_p(table)
    assert p == pytest.approx(brute_force_p(b, c), abs=1e-12)
    if b + c:
        assert p == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue, abs=1e-12)
    else:
        assert p == 1.0


def test_concordant_pairs_do_not_count() -> None:
    assert mcnemar_exact_p(PairedTable(0, 9, 1, 0)) == mcnemar_exact_p(PairedTable(50, 9, 1, 70))
    assert mcnemar_exact_p(PairedTable(0, 9, 1, 0)) == pytest.approx(22 / 1024)


def test_large_tables_use_the_binomial_cdf() -> None:
    """Past EXACT_MAX discordant pairs the p-value comes from scipy's CDF; both paths agree
    on either side of the switch, and a tiny p-value does not underflow to a crash."""
    for m in (EXACT_MAX, EXACT_MAX + 2):
        b = m // 2 - 40
        p = mcnemar_exact_p(PairedTable(0, b, m - b, 0))
        assert p == pytest.approx(stats.binomtest(b, m, 0.5).pvalue, rel=1e-9)
    assert mcnemar_exact_p(PairedTable(0, 10, 90_000, 0)) == 0.0  # below the smallest float
