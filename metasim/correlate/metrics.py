"""Agreement between simulated and real success rates of N policies (see shared METRICS.md).

`pearson`, `spearman`, `kendall` and `mmrv` take two 1-D sequences of length N and return
a float. Their `_batch` forms take arrays of shape (B, N) and return shape (B,), which
is what the bootstrap uses. An undefined value (fewer than 2 policies, or a constant
sequence for a correlation) is NaN rather than an exception, so a bootstrap can drop it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

Array = NDArray[np.float64]
METRICS = ("pearson", "spearman", "kendall", "mmrv")
# Above this many policies per row, Kendall's τ and MMRV use O(N log N) forms instead of
# (B, N, N) pairwise arrays, whose time and memory grow with the square of N.
_PAIRWISE_MAX_N = 64


def _rows(x: ArrayLike | Sequence[float], y: ArrayLike | Sequence[float]) -> tuple[Array, Array]:
    """Both inputs as float arrays of shape (B, N), with the shapes checked."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim not in (1, 2):
        raise ValueError(
            f"expected two arrays of one shape, (N,) or (B, N); got {a.shape}, {b.shape}"
        )
    return np.atleast_2d(a), np.atleast_2d(b)


def pearson_batch(a: Array, b: Array) -> Array:
    """Pearson's r of each row pair of (B, N) arrays; NaN where a row is constant or N < 2."""
    a, b = _rows(a, b)
    da = a - a.mean(axis=1, keepdims=True)
    db = b - b.mean(axis=1, keepdims=True)
    den = np.sqrt((da * da).sum(axis=1) * (db * db).sum(axis=1))
    num = (da * db).sum(axis=1)
    # A row that varies only by rounding error is constant.
    ok = (den > 1e-12) & (a.shape[1] >= 2)
    r = np.full(a.shape[0], np.nan)
    r[ok] = np.clip(num[ok] / den[ok], -1.0, 1.0)
    return r


def spearman_batch(a: Array, b: Array) -> Array:
    """Spearman's ρ of each row pair: Pearson's r of the ranks, ties at their average rank."""
    a, b = _rows(a, b)
    ra = stats.rankdata(a, method="average", axis=1)
    rb = stats.rankdata(b, method="average", axis=1)
    return pearson_batch(ra, rb)


def kendall_batch(a: Array, b: Array) -> Array:
    """Kendall's τ-b of each row pair: (C − D) / sqrt((P − Tx)(P − Ty)).

    C, D: concordant and discordant pairs; P = N(N−1)/2; Tx (Ty): pairs tied in x (y),
    a pair tied in both counting in both. NaN when every pair is tied in x or in y.
    """
    a, b = _rows(a, b)
    if a.shape[1] > _PAIRWISE_MAX_N:  # O(N log N) per row instead of O(N²) cells
        return np.array([_kendall_row(x, y) for x, y in zip(a, b, strict=True)])
    i, j = np.triu_indices(a.shape[1], k=1)
    sa = np.sign(a[:, i] - a[:, j])  # (B, N(N−1)/2): each pair once
    sb = np.sign(b[:, i] - b[:, j])
    s = (sa * sb).sum(axis=1)
    untied_a = np.count_nonzero(sa, axis=1).astype(np.float64)
    untied_b = np.count_nonzero(sb, axis=1).astype(np.float64)
    den = np.sqrt(untied_a * untied_b)
    tau = np.full(a.shape[0], np.nan)
    ok = den > 0
    tau[ok] = s[ok] / den[ok]
    return tau


def _kendall_row(x: Array, y: Array) -> float:
    """Kendall's τ-b of one pair of rows by scipy's O(N log N) count; NaN when undefined."""
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(stats.kendalltau(x, y, variant="b").statistic)


def _mmrv_sorted(s: Array, r: Array) -> Array:
    """MMRV of each row pair of (B, N) arrays in O(N log N) per row, no (N, N) arrays.

    Sorted by sim, policy i is violated by j with S_j < S_i and R_j ≥ R_i (worst: the
    largest such R_j, a prefix maximum over the smaller sim values) or with S_j ≥ S_i and
    R_j < R_i (worst: the smallest such R_j, a suffix minimum from i's tie group on).
    """
    order = np.argsort(s, axis=1, kind="stable")
    ss = np.take_along_axis(s, order, axis=1)
    rs = np.take_along_axis(r, order, axis=1)
    idx = np.arange(s.shape[1])
    first = np.ones(ss.shape, dtype=bool)
    first[:, 1:] = ss[:, 1:] != ss[:, :-1]
    group = np.maximum.accumulate(np.where(first, idx, 0), axis=1)  # start of i's tie group
    prefix_max = np.maximum.accumulate(rs, axis=1)
    below = np.take_along_axis(prefix_max, np.maximum(group - 1, 0), axis=1)
    below = np.where(group > 0, below, -np.inf)
    suffix_min = np.minimum.accumulate(rs[:, ::-1], axis=1)[:, ::-1]
    at_or_above = np.take_along_axis(suffix_min, group, axis=1)
    worst = np.maximum(np.maximum(below - rs, rs - at_or_above), 0.0)
    return np.asarray(worst.mean(axis=1), dtype=np.float64)


def mmrv_batch(*, sim: Array, real: Array) -> Array:
    """MMRV of each row pair of (B, N) arrays; see `mmrv`."""
    s, r = _rows(sim, real)
    if s.shape[1] == 0:
        return np.full(s.shape[0], np.nan)
    if s.shape[1] > _PAIRWISE_MAX_N:
        return _mmrv_sorted(s, r)
    s_gt = s[:, :, None] > s[:, None, :]  # (B, N, N): S_i > S_j
    r_gt = r[:, :, None] > r[:, None, :]
    gap = np.abs(r[:, :, None] - r[:, None, :])
    worst = np.where(s_gt != r_gt, gap, 0.0).max(axis=2)  # (B, N): max over j
    return np.asarray(worst.mean(axis=1), dtype=np.float64)


def pearson(x: ArrayLike, y: ArrayLike) -> float:
    """Pearson's r between x and y (linear agreement of the rates themselves)."""
    return float(pearson_batch(*_rows(x, y))[0])


def spearman(x: ArrayLike, y: ArrayLike) -> float:
    """Spearman's ρ between x and y (agreement of the ranks, ties averaged)."""
    return float(spearman_batch(*_rows(x, y))[0])


def kendall(x: ArrayLike, y: ArrayLike) -> float:
    """Kendall's τ-b between x and y (pairwise order agreement, ties handled)."""
    return float(kendall_batch(*_rows(x, y))[0])


def mmrv(*, sim: ArrayLike, real: ArrayLike) -> float:
    """Mean maximum rank violation (SIMPLER); 0 when sim orders the policies like real.

    MMRV = (1/N) Σ_i max_j |R_i − R_j| · 1[(S_i > S_j) ≠ (R_i > R_j)]

    A violation is weighted by the gap between the two policies' **real** success rates,
    so the arguments are not interchangeable: they are keyword-only.
    """
    s, r = _rows(sim, real)
    return float(mmrv_batch(sim=s, real=r)[0])


def batch_metrics(sim: Array, real: Array) -> dict[str, Array]:
    """Every metric of METRICS over the rows of (B, N) arrays, keyed by name."""
    return {
        "pearson": pearson_batch(sim, real),
        "spearman": spearman_batch(sim, real),
        "kendall": kendall_batch(sim, real),
        "mmrv": mmrv_batch(sim=sim, real=real),
    }
