"""Aggregates across tasks with stratified bootstrap intervals (rliable's definitions).

Scores form a ``(runs, tasks)`` matrix: ``scores[n, m]`` is the score of run ``n`` (an
independent seed or checkpoint) on task ``m``. The point estimates match
``rliable.metrics`` 1.2.0 exactly; the bootstrap matches ``rliable.library`` up to Monte
Carlo error (it draws from its own generator). See shared METRICS.md.

The bootstrap resamples runs with replacement **within each task** (column), each task
independently. Resampling whole rows, or stacking episodes as runs, bootstraps the wrong
axis and gives intervals that are too narrow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

CIMethod = Literal["percentile", "basic"]
Statistic = Callable[[NDArray[np.float64]], float]
VectorStatistic = Callable[[NDArray[np.float64]], NDArray[np.float64]]


class Interval(NamedTuple):
    """A point estimate with its two-sided interval."""

    estimate: float
    low: float
    high: float


class Bands(NamedTuple):
    """Point estimates of a vector statistic with pointwise intervals, each shape ``(K,)``."""

    estimate: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]


class Profile(NamedTuple):
    """A performance profile F(tau) on ``taus`` with pointwise bootstrap bands, all ``(K,)``."""

    taus: NDArray[np.float64]
    fraction: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]


def as_score_matrix(scores: ArrayLike) -> NDArray[np.float64]:
    """Check and convert to a finite float ``(runs, tasks)`` matrix with runs, tasks >= 1."""
    arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"scores must be a non-empty (runs, tasks) matrix, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("scores must be finite")
    return arr


def _iqm_batch(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """IQM of each ``(N, M)`` matrix in a ``(R, N, M)`` stack, shape ``(R,)``.

    The same steps as ``scipy.stats.trim_mean(a, 0.25)`` on the flattened matrix: partition
    at the cut points, then average the kept middle.
    """
    flat = x.reshape(x.shape[0], -1)
    nobs = flat.shape[1]
    lowercut = int(0.25 * nobs)
    uppercut = nobs - lowercut
    part = np.partition(flat, (lowercut, uppercut - 1), axis=1)
    return np.mean(part[:, lowercut:uppercut], axis=1)


def _mean_batch(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.mean(np.mean(x, axis=1), axis=1)


def _median_batch(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.median(np.mean(x, axis=1), axis=1)


def _gap_batch(x: NDArray[np.float64], gamma: float = 1.0) -> NDArray[np.float64]:
    return gamma - np.mean(np.minimum(x, gamma), axis=(1, 2))


def _poi_batch(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """P(X > Y) for stacks ``x`` ``(R, N_x, M)`` and ``y`` ``(R, N_y, M)``, shape ``(R,)``."""
    # Pairwise comparison per task: shape (R, N_x, N_y, M).
    diff = x[:, :, None, :] - y[:, None, :, :]
    wins = (diff > 0).astype(np.float64) + 0.5 * (diff == 0)
    return np.mean(np.mean(wins, axis=(1, 2)), axis=1)


def _profile_batch(x: NDArray[np.float64], taus: NDArray[np.float64]) -> NDArray[np.float64]:
    """Fraction of scores above each tau for a ``(R, N, M)`` stack, shape ``(R, K)``."""
    flat = x.reshape(x.shape[0], -1, 1)
    return np.mean(flat > taus.reshape(1, 1, -1), axis=1)


def iqm(scores: ArrayLike) -> float:
    """Interquartile mean: the 25% trimmed mean of all ``(runs, tasks)`` scores pooled.

    Equal to ``rliable.metrics.aggregate_iqm``, i.e. ``scipy.stats.trim_mean`` with
    ``proportiontocut=0.25`` on the flattened matrix.
    """
    return float(_iqm_batch(as_score_matrix(scores)[None])[0])


def mean(scores: ArrayLike) -> float:
    """Mean over tasks of the per-task mean over runs (``rliable``'s ``aggregate_mean``)."""
    return float(_mean_batch(as_score_matrix(scores)[None])[0])


def median(scores: ArrayLike) -> float:
    """Median over tasks of the per-task mean over runs (``rliable``'s ``aggregate_median``)."""
    return float(_median_batch(as_score_matrix(scores)[None])[0])


def optimality_gap(scores: ArrayLike, gamma: float = 1.0) -> float:
    """``gamma - mean(min(score, gamma))`` over all runs and tasks pooled.

    How far the scores fall short of the target ``gamma``; scores above it earn nothing.
    """
    return float(_gap_batch(as_score_matrix(scores)[None], gamma)[0])


def _check_pair(x: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    xs, ys = as_score_matrix(x), as_score_matrix(y)
    if xs.shape[1] != ys.shape[1]:
        raise ValueError(f"x and y need the same tasks, got {xs.shape} and {ys.shape}")
    return xs, ys


def probability_of_improvement(x: ArrayLike, y: ArrayLike) -> float:
    """P(X > Y) averaged over tasks: (1/M) Σ_m U_m / (N_x N_y), ties counting one half.

    ``x`` is ``(N_x, M)`` and ``y`` is ``(N_y, M)``: the run counts may differ, the tasks
    must match. ``U_m`` is the Mann–Whitney U statistic of ``x[:, m]`` against ``y[:, m]``.
    """
    xs, ys = _check_pair(x, y)
    return float(_poi_batch(xs[None], ys[None])[0])


# Vectorized forms of the public statistics, used by the bootstrap when it is given them.
_BATCHED: dict[object, Callable[[NDArray[np.float64]], NDArray[np.float64]]] = {
    iqm: _iqm_batch,
    mean: _mean_batch,
    median: _median_batch,
    optimality_gap: _gap_batch,
}


def stratified_resample(scores: NDArray[np.float64], rng: np.random.Generator) -> NDArray:
    """One stratified bootstrap draw: runs resampled with replacement within each task.

    ``scores`` is ``(N, M)``; the result is ``(N, M)`` where column ``m`` holds ``N`` draws
    from column ``m`` only, independently of the other columns.
    """
    return _resample_stack(scores, 1, rng)[0]


def _resample_stack(
    scores: NDArray[np.float64], count: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """``count`` stratified resamples of an ``(N, M)`` matrix, shape ``(count, N, M)``."""
    n_runs, n_tasks = scores.shape
    rows = rng.integers(0, n_runs, size=(count, n_runs, n_tasks))
    return scores[rows, np.arange(n_tasks)]


def _chunks(reps: int, cells: int) -> list[int]:
    """Split ``reps`` into chunks of at most ~2**20 resampled cells (a function of shape)."""
    size = max(1, min(reps, 2**20 // max(cells, 1)))
    return [min(size, reps - start) for start in range(0, reps, size)]


def bootstrap_distribution(
    scores: ArrayLike,
    statistic: Callable[[NDArray[np.float64]], ArrayLike],
    reps: int = 2000,
    seed: int = 0,
) -> NDArray[np.float64]:
    """Statistic on ``reps`` stratified bootstrap resamples, shape ``(reps, *S)``.

    ``statistic`` maps a ``(runs, tasks)`` matrix to a scalar or an array of shape ``S``.
    The library's own statistics (``iqm``, ``mean``, ...) run vectorized over resamples;
    the draws, and so the result, are the same either way.
    """
    arr = as_score_matrix(scores)
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    rng = np.random.default_rng(seed)
    batched = _BATCHED.get(statistic)
    parts: list[NDArray[np.float64]] = []
    for count in _chunks(reps, arr.size):
        stack = _resample_stack(arr, count, rng)
        if batched is not None:
            parts.append(batched(stack))
        else:
            parts.append(np.stack([np.asarray(statistic(s), np.float64) for s in stack]))
    return np.concatenate(parts)


def interval_from_distribution(
    boot: NDArray[np.float64],
    estimate: ArrayLike,
    level: float = 0.95,
    method: CIMethod = "percentile",
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Lower and upper bounds from a bootstrap distribution ``(reps, *S)``, each ``S``.

    - "percentile": the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles (linear
      interpolation, as ``arch`` and hence ``rliable`` use).
    - "basic": the percentile interval reflected about the estimate.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    alpha = (1.0 - level) / 2
    lo, hi = np.percentile(boot, [100 * alpha, 100 * (1 - alpha)], axis=0)
    if method == "percentile":
        return lo, hi
    if method == "basic":
        est = np.asarray(estimate, np.float64)
        return 2 * est - hi, 2 * est - lo
    raise ValueError(f"unknown bootstrap method {method!r}; expected 'percentile' or 'basic'")


def stratified_bootstrap_ci(
    scores: ArrayLike,
    statistic: Statistic,
    reps: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    method: CIMethod = "percentile",
) -> Interval:
    """Stratified bootstrap interval for a scalar statistic of a ``(runs, tasks)`` matrix.

    Runs are resampled with replacement within each task, independently per task, as in
    ``rliable.library.get_interval_estimates`` with ``task_bootstrap=False``. Returns the
    statistic on the data and the ``level`` interval. Deterministic given ``seed``.
    """
    arr = as_score_matrix(scores)
    value = np.asarray(statistic(arr))
    if value.ndim != 0:
        raise ValueError("statistic must return a scalar; use stratified_bootstrap_bands")
    estimate = float(value)
    boot = bootstrap_distribution(arr, statistic, reps, seed)
    lo, hi = interval_from_distribution(boot, estimate, level, method)
    return Interval(estimate, float(lo), float(hi))


def stratified_bootstrap_bands(
    scores: ArrayLike,
    statistic: VectorStatistic,
    reps: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    method: CIMethod = "percentile",
) -> Bands:
    """Pointwise stratified bootstrap intervals for a statistic returning shape ``(K,)``."""
    arr = as_score_matrix(scores)
    estimate = np.asarray(statistic(arr), np.float64)
    boot = bootstrap_distribution(arr, statistic, reps, seed)
    lo, hi = interval_from_distribution(boot, estimate, level, method)
    return Bands(estimate, np.asarray(lo), np.asarray(hi))


def score_distribution(scores: ArrayLike, taus: ArrayLike) -> NDArray[np.float64]:
    """Fraction of all (run, task) scores strictly above each tau, shape ``(K,)``."""
    t = np.atleast_1d(np.asarray(taus, np.float64))
    return _profile_batch(as_score_matrix(scores)[None], t)[0]


def profile_bootstrap_distribution(
    scores: ArrayLike, taus: ArrayLike, reps: int = 2000, seed: int = 0
) -> NDArray[np.float64]:
    """Score distribution on ``reps`` stratified resamples, shape ``(reps, K)``."""
    arr = as_score_matrix(scores)
    t = np.atleast_1d(np.asarray(taus, np.float64))
    rng = np.random.default_rng(seed)
    return np.concatenate(
        [_profile_batch(_resample_stack(arr, c, rng), t) for c in _chunks(reps, arr.size)]
    )


def performance_profile(
    scores: ArrayLike,
    taus: ArrayLike,
    reps: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Profile:
    """Run-score performance profile F(tau) = fraction of (run, task) scores > tau.

    As ``rliable.library.create_performance_profile`` with the default
    ``use_score_distribution=True``: the mean over runs and tasks of ``score > tau``, with
    pointwise percentile bands from the stratified bootstrap. ``taus`` is ``(K,)``.
    """
    arr = as_score_matrix(scores)
    t = np.atleast_1d(np.asarray(taus, np.float64))
    boot = profile_bootstrap_distribution(arr, t, reps, seed)
    fraction = _profile_batch(arr[None], t)[0]
    lo, hi = interval_from_distribution(boot, fraction, level)
    return Profile(t, fraction, lo, hi)


def probability_of_improvement_ci(
    x: ArrayLike,
    y: ArrayLike,
    reps: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    method: CIMethod = "percentile",
) -> Interval:
    """P(X > Y) with a stratified bootstrap interval.

    ``x`` ``(N_x, M)`` and ``y`` ``(N_y, M)`` are resampled independently of each other,
    each within each task, as ``rliable``'s ``StratifiedIndependentBootstrap`` does.
    """
    xs, ys = _check_pair(x, y)
    estimate = probability_of_improvement(xs, ys)
    boot = poi_bootstrap_distribution(xs, ys, reps, seed)
    lo, hi = interval_from_distribution(boot, estimate, level, method)
    return Interval(estimate, float(lo), float(hi))


def poi_bootstrap_distribution(
    x: ArrayLike, y: ArrayLike, reps: int = 2000, seed: int = 0
) -> NDArray[np.float64]:
    """P(X > Y) on ``reps`` independent stratified resamples of x and y, shape ``(reps,)``."""
    xs, ys = _check_pair(x, y)
    rng = np.random.default_rng(seed)
    parts = []
    for count in _chunks(reps, xs.shape[0] * ys.shape[0] * xs.shape[1]):
        # Per chunk, x's resamples are drawn, then y's: the two are independent.
        parts.append(_poi_batch(_resample_stack(xs, count, rng), _resample_stack(ys, count, rng)))
    return np.concatenate(parts)


AGGREGATES: dict[str, Statistic] = {
    "mean": mean,
    "median": median,
    "iqm": iqm,
    "optimality_gap": optimality_gap,
}


def aggregate_summary(
    scores: ArrayLike, reps: int = 2000, level: float = 0.95, seed: int = 0
) -> dict[str, dict[str, float]]:
    """Mean, median, IQM and optimality gap, each with a stratified bootstrap interval.

    Shaped for ``summary.json``: ``{"iqm": {"value": v, "low": lo, "high": hi}, ...}``.
    """
    out: dict[str, dict[str, float]] = {}
    for name, fn in AGGREGATES.items():
        est, lo, hi = stratified_bootstrap_ci(scores, fn, reps=reps, level=level, seed=seed)
        out[name] = {"value": est, "low": lo, "high": hi}
    return out
