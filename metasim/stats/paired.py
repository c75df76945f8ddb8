"""The difference of two success rates measured on the SAME episodes (paired outcomes).

When one episode is scored twice (metasim and the LIBERO reference replaying its
actions; two policies from the same init states) the two outcomes are correlated, and
an interval for independent samples (`sensitivity.newcombe_interval`) is too wide when
they agree and wrong in general. Newcombe's method 10 for paired proportions uses the
2x2 table of the pairs:

                    second succeeds   second fails
    first succeeds        a                b
    first fails           c                d          n = a + b + c + d

p1 = (a + b) / n, p2 = (a + c) / n, D = p1 - p2 = (b - c) / n. With the Wilson
intervals (l1, u1) of p1 and (l2, u2) of p2 and the phi coefficient of the table
phi = (ad - bc) / sqrt((a+b)(c+d)(a+c)(b+d)) (0 when a margin is empty):

    delta   = sqrt((p1 - l1)² - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)²)
    epsilon = sqrt((u1 - p1)² - 2 phi (u1 - p1)(p2 - l2) + (p2 - l2)²)
    interval = (D - delta, D + epsilon)

Newcombe (1998), "Improved confidence intervals for the difference between binomial
proportions based on paired data", Statistics in Medicine 17:2635-2650 (method 10).

McNemar's exact test asks whether the two rates differ: under the null hypothesis each
of the m = b + c discordant pairs is equally likely to be (success, failure) or
(failure, success), so b ~ Binomial(m, 1/2) and the two-sided p-value is
min(1, 2 P(X <= min(b, c))), the exact binomial test of the discordant counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from metasim.stats.intervals import success_interval

EXACT_MAX = 5000  # discordant pairs summed exactly by mcnemar_exact_p


@dataclass(frozen=True)
class PairedTable:
    """Counts of n paired outcomes: both succeed (a), only the first (b), only the
    second (c), neither (d)."""

    a: int
    b: int
    c: int
    d: int

    @classmethod
    def of(cls, first: Sequence[bool], second: Sequence[bool]) -> PairedTable:
        """The table of two equally long outcome sequences (pair i = first[i], second[i])."""
        if len(first) != len(second):
            raise ValueError(f"paired outcomes need equal lengths, got {len(first)}, {len(second)}")
        pairs = [(bool(x), bool(y)) for x, y in zip(first, second, strict=True)]
        return cls(
            a=pairs.count((True, True)),
            b=pairs.count((True, False)),
            c=pairs.count((False, True)),
            d=pairs.count((False, False)),
        )

    @property
    def n(self) -> int:
        return self.a + self.b + self.c + self.d

    @property
    def difference(self) -> float:
        """p1 - p2 = (b - c) / n (0 without pairs)."""
        return (self.b - self.c) / self.n if self.n else 0.0

    def phi(self) -> float:
        """The phi coefficient of the table; 0 when a margin is empty."""
        a, b, c, d = self.a, self.b, self.c, self.d
        margins = (a + b) * (c + d) * (a + c) * (b + d)
        return (a * d - b * c) / math.sqrt(margins) if margins else 0.0


def paired_difference_interval(table: PairedTable, level: float = 0.95) -> tuple[float, float]:
    """Newcombe's method-10 interval (module doc) for p1 - p2 from a paired table;
    (-1, 1) without pairs. Both ends are clipped to [-1, 1]."""
    n = table.n
    if n == 0:
        return -1.0, 1.0
    k1, k2 = table.a + table.b, table.a + table.c
    p1, p2 = k1 / n, k2 / n
    l1, u1 = success_interval(k1, n, level)
    l2, u2 = success_interval(k2, n, level)
    phi = table.phi()
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    epsilon = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    d = p1 - p2
    return max(-1.0, d - delta), min(1.0, d + epsilon)


def mcnemar_exact_p(table: PairedTable) -> float:
    """Two-sided exact McNemar p-value of a paired table (module doc); 1 without
    discordant pairs. Exact integer arithmetic up to EXACT_MAX discordant pairs, scipy's
    binomial CDF beyond (the integer sums grow quadratically)."""
    m = table.b + table.c
    if m == 0:
        return 1.0
    low = min(table.b, table.c)
    if m > EXACT_MAX:
        from scipy.stats import binom

        return min(1.0, 2.0 * float(binom.cdf(low, m, 0.5)))
    tail = sum(math.comb(m, i) for i in range(low + 1))
    return min(1.0, float(Fraction(2 * tail, 2**m)))
