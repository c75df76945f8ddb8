"""Intervals for a success rate: k successes in n episodes (see shared METRICS.md)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy import stats

Method = Literal["wilson", "beta"]


def success_interval(
    k: int, n: int, level: float = 0.95, method: Method = "wilson"
) -> tuple[float, float]:
    """Two-sided interval for the success probability after k successes in n episodes.

    - "wilson": the Wilson score interval.
    - "beta": the equal-tailed interval of the Beta(k + 1, n - k + 1) posterior
      (uniform prior), as RoboLab reports.
    With n = 0 nothing is known: (0, 1).
    """
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n == 0:
        return 0.0, 1.0
    alpha = 1.0 - level
    if method == "beta":
        lo = float(stats.beta.ppf(alpha / 2, k + 1, n - k + 1))
        hi = float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k + 1))
        return lo, hi
    if method != "wilson":
        raise ValueError(f"unknown interval method {method!r}; expected 'wilson' or 'beta'")
    z = float(stats.norm.ppf(1 - alpha / 2))
    p = k / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if k == 0 else max(0.0, float(center - half))
    hi = 1.0 if k == n else min(1.0, float(center + half))
    return lo, hi
