"""Intervals for a success rate: k successes in n episodes (see shared METRICS.md)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
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
    lo, hi = success_intervals(k, n, level, method)
    return float(lo), float(hi)


def success_intervals(
    k: ArrayLike, n: ArrayLike, level: float = 0.95, method: Method = "wilson"
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Vectorized :func:`success_interval`: k and n broadcast together; returns (low, high).

    Same definitions and edge cases as the scalar function, for many cells at once.
    """
    ks = np.asarray(k, dtype=np.float64)
    ns = np.asarray(n, dtype=np.float64)
    if np.any((ks < 0) | (ks > ns)):
        raise ValueError("need 0 <= k <= n for every cell")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    ks, ns = np.broadcast_arrays(ks, ns)
    alpha = 1.0 - level
    if method == "beta":
        lo = stats.beta.ppf(alpha / 2, ks + 1, ns - ks + 1)
        hi = stats.beta.ppf(1 - alpha / 2, ks + 1, ns - ks + 1)
    elif method == "wilson":
        lo, hi = _wilson(ks, ns, float(stats.norm.ppf(1 - alpha / 2)))
    else:
        raise ValueError(f"unknown interval method {method!r}; expected 'wilson' or 'beta'")
    empty = ns == 0
    lo = np.where(empty, 0.0, lo)
    hi = np.where(empty, 1.0, hi)
    return np.asarray(lo, np.float64), np.asarray(hi, np.float64)


def _wilson(
    k: NDArray[np.float64], n: NDArray[np.float64], z: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score bounds, exactly 0 at k = 0 and 1 at k = n."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        denom = 1 + z * z / n
        center = (p + z * z / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = np.where(k == 0, 0.0, np.maximum(0.0, center - half))
    hi = np.where(k == n, 1.0, np.minimum(1.0, center + half))
    return lo, hi
