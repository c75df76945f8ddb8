"""Aggregates of two runs' per-task success rates with intervals over episodes.

Comparing two checkpoints A and B that were each evaluated once, the score matrix of each
is ``(1, tasks)``: the per-task success rates. rliable's point estimates (IQM, optimality
gap, mean, median, probability of improvement) apply to those matrices unchanged
(`metasim.stats.aggregates`). With one run per checkpoint a bootstrap over runs has
nothing to resample; what is uncertain is each rate, measured on finitely many episodes.
So the intervals here come from a stratified bootstrap over **episodes within each task**
(tasks are the strata), the same draw for every statistic:

- paired runs (episode k of a task started from the same state in both): the pairs are
  resampled, so A's and B's resampled rates move together as the data do. Resampling n
  pairs with replacement draws the counts of the four pair kinds (both succeed, only A,
  only B, neither) from Multinomial(n, observed shares), which is how it is drawn here;
- unpaired runs: A's and B's episodes are resampled independently, each task's count
  from Binomial(n, k / n).

These intervals describe the episode noise of these two checkpoints, not the spread
between training seeds; for that, evaluate several seeds per checkpoint and bootstrap
over runs (`stratified_bootstrap_ci`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from metasim.stats.aggregates import (
    _gap_batch,
    _iqm_batch,
    _mean_batch,
    _median_batch,
    _poi_batch,
    _profile_batch,
    interval_from_distribution,
)
from metasim.stats.paired import PairedTable

# Name -> vectorized statistic of a (R, runs, tasks) stack, shape (R,).
STATISTICS = {
    "iqm": _iqm_batch,
    "optimality_gap": _gap_batch,
    "mean": _mean_batch,
    "median": _median_batch,
}


@dataclass(frozen=True)
class TaskOutcomes:
    """One task's outcomes in runs A and B: a paired table, or two independent counts."""

    k_a: int
    n_a: int
    k_b: int
    n_b: int
    table: PairedTable | None = None  # set when the episodes are paired

    @classmethod
    def paired(cls, table: PairedTable) -> TaskOutcomes:
        a, b, c, _ = table.a, table.b, table.c, table.d
        return cls(a + b, table.n, a + c, table.n, table)


@dataclass(frozen=True)
class RateResamples:
    """Point per-task rates ``(M,)`` and their bootstrap resamples ``(R, M)``, A and B."""

    a: NDArray[np.float64]
    b: NDArray[np.float64]
    boot_a: NDArray[np.float64]
    boot_b: NDArray[np.float64]


def _rate(k: int, n: int) -> float:
    return k / n if n else 0.0


def resample_rates(tasks: Sequence[TaskOutcomes], reps: int = 2000, seed: int = 0) -> RateResamples:
    """Stratified bootstrap of both runs' per-task rates (module doc), tasks in order."""
    if not tasks:
        raise ValueError("no tasks to compare")
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    rng = np.random.default_rng(seed)
    boot_a = np.empty((reps, len(tasks)))
    boot_b = np.empty((reps, len(tasks)))
    for m, t in enumerate(tasks):
        if t.table is not None and t.table.n:
            tb = t.table
            shares = np.array([tb.a, tb.b, tb.c, tb.d], np.float64) / tb.n
            counts = rng.multinomial(tb.n, shares, size=reps)  # (R, 4)
            boot_a[:, m] = (counts[:, 0] + counts[:, 1]) / tb.n
            boot_b[:, m] = (counts[:, 0] + counts[:, 2]) / tb.n
        else:
            boot_a[:, m] = _binomial_rates(rng, t.k_a, t.n_a, reps)
            boot_b[:, m] = _binomial_rates(rng, t.k_b, t.n_b, reps)
    a = np.array([_rate(t.k_a, t.n_a) for t in tasks])
    b = np.array([_rate(t.k_b, t.n_b) for t in tasks])
    return RateResamples(a, b, boot_a, boot_b)


def resample_one(
    ks: Sequence[int], ns: Sequence[int], reps: int = 2000, seed: int = 0
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """One run's per-task rates ``(M,)`` and their resamples ``(R, M)`` (episodes
    resampled within each task: a Binomial(n, k / n) count per task)."""
    rng = np.random.default_rng(seed)
    boot = np.stack([_binomial_rates(rng, k, n, reps) for k, n in zip(ks, ns, strict=True)], 1)
    return np.array([_rate(k, n) for k, n in zip(ks, ns, strict=True)]), boot


def _binomial_rates(rng: np.random.Generator, k: int, n: int, reps: int) -> NDArray[np.float64]:
    if n == 0:
        return np.zeros(reps)
    return rng.binomial(n, k / n, size=reps) / n


def _interval(boot: NDArray[np.float64], value: float, level: float) -> dict[str, object]:
    lo, hi = interval_from_distribution(boot, value, level)
    return {"value": value, "ci95": [float(lo), float(hi)]}


def compare_aggregates(rs: RateResamples, level: float = 0.95) -> dict[str, Any]:
    """IQM, optimality gap, mean and median of each run's rates, B's IQM minus A's, and
    P(B > A) (rliable's probability of improvement over tasks), each with a percentile
    interval from the resamples. Values are floats; intervals ``[low, high]``."""
    out: dict[str, Any] = {}
    for side, point, boot in (("a", rs.a, rs.boot_a), ("b", rs.b, rs.boot_b)):
        stats = {}
        for name, fn in STATISTICS.items():
            value = float(fn(point[None, None, :])[0])
            stats[name] = _interval(fn(boot[:, None, :]), value, level)
        out[side] = stats
    diff = _iqm_batch(rs.boot_b[:, None, :]) - _iqm_batch(rs.boot_a[:, None, :])
    iqm_diff = float(_iqm_batch(rs.b[None, None, :])[0] - _iqm_batch(rs.a[None, None, :])[0])
    out["iqm_diff"] = _interval(diff, iqm_diff, level)
    poi = float(_poi_batch(rs.b[None, None, :], rs.a[None, None, :])[0])
    out["probability_of_improvement"] = _interval(
        _poi_batch(rs.boot_b[:, None, :], rs.boot_a[:, None, :]), poi, level
    )
    return out


def profile_bands(
    point: NDArray[np.float64], boot: NDArray[np.float64], taus: NDArray[np.float64], level: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """F(tau) of per-task rates ``(M,)`` with pointwise bands from resamples ``(R, M)``;
    each result is ``(K,)`` for ``taus`` ``(K,)``."""
    fraction = _profile_batch(point[None, None, :], taus)[0]
    lo, hi = interval_from_distribution(_profile_batch(boot[:, None, :], taus), fraction, level)
    return fraction, np.asarray(lo), np.asarray(hi)
