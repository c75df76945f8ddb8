"""Per-task and pooled sim-to-real agreement with bootstrap intervals.

Intervals are percentile intervals of a two-level parametric bootstrap: each replicate
draws the task's N policies with replacement, then redraws each drawn policy's sim and
real success rates from Binomial(n, p) / n where its episode count n is known (a rate
without a count is kept as is). Both sources of noise, which policies were studied and
how many episodes each rate rests on, so widen the interval.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from metasim.correlate.metrics import _PAIRWISE_MAX_N, METRICS, Array, batch_metrics
from metasim.correlate.study import Study, TaskData

_CELLS_PER_CHUNK = 4_000_000  # bound on reps × N × N in one batched metric call


@dataclass(frozen=True)
class BootstrapSpec:
    """How intervals are computed: `reps` replicates from `seed`, two-sided at `level`."""

    reps: int = 2000
    seed: int = 0
    level: float = 0.95


def _redraw(rng: np.random.Generator, rate: Array, n: np.ndarray) -> Array:
    """Rates (reps, N) redrawn as Binomial(n, rate) / n where n > 0, else kept."""
    out = rate.copy()
    known = n > 0
    out[known] = rng.binomial(n[known], rate[known]) / n[known]
    return out


def resample_task(rng: np.random.Generator, data: TaskData, reps: int) -> tuple[Array, Array]:
    """`reps` bootstrap replicates of one task: sim and real rates, each (reps, N)."""
    idx = rng.integers(0, len(data.policies), size=(reps, len(data.policies)))
    sim = _redraw(rng, data.sim[idx], data.sim_n[idx])
    real = _redraw(rng, data.real[idx], data.real_n[idx])
    return sim, real


def chunked_metrics(sim: Array, real: Array) -> dict[str, Array]:
    """`batch_metrics` over (reps, N) arrays, in chunks that bound memory."""
    n = max(sim.shape[1], 1)
    # (B, N, N) pairwise arrays for small N; above, about ten (B, N) temporaries.
    per_rep = n * n if n <= _PAIRWISE_MAX_N else 10 * n
    step = max(1, _CELLS_PER_CHUNK // per_rep)
    parts = [batch_metrics(sim[i : i + step], real[i : i + step]) for i in range(0, len(sim), step)]
    return {m: np.concatenate([p[m] for p in parts]) for m in METRICS}


def _number(value: float) -> float | None:
    """A JSON-safe float: NaN (undefined) becomes None."""
    return None if not np.isfinite(value) else float(value)


def _intervals(reps: dict[str, Array], level: float) -> tuple[dict[str, Any], dict[str, int]]:
    """Percentile interval per metric over its finite replicates, and how many there were."""
    ci: dict[str, Any] = {}
    valid: dict[str, int] = {}
    tail = (1.0 - level) / 2
    for name, values in reps.items():
        good = values[np.isfinite(values)]
        valid[name] = int(good.size)
        if good.size < 2:
            ci[name] = None
        else:
            lo, hi = np.quantile(good, [tail, 1.0 - tail])
            ci[name] = [float(lo), float(hi)]
    return ci, valid


def _point(sim: Array, real: Array) -> dict[str, float | None]:
    values = batch_metrics(sim[None, :], real[None, :])
    return {m: _number(float(values[m][0])) for m in METRICS}


def _mean_over_tasks(per_task: list[dict[str, float | None]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for m in METRICS:
        values = [v for t in per_task if (v := t[m]) is not None]
        out[m] = float(np.mean(values)) if values else None
    return out


def analyze(study: Study, spec: BootstrapSpec | None = None) -> dict[str, Any]:
    """Agreement per task and pooled, with intervals; a JSON-ready dict (see module doc).

    {"tasks": {task: {"pearson", "spearman", "kendall", "mmrv", "n_policies",
    "policies", "ci95": {metric: [lo, hi] | None}, "valid_reps": {metric: k}}},
    "pooled": {... over every (task, policy) point, "mean_over_tasks": {...}},
    "method": {...}, "warnings": [...]}. An undefined value is None.
    """
    spec = spec or BootstrapSpec()
    rng = np.random.default_rng(spec.seed)
    tasks: dict[str, Any] = {}
    notes: list[str] = []
    sims, reals, task_reps, points = [], [], [], []
    for data in study.tasks():
        row: dict[str, Any] = {"n_policies": len(data.policies), "policies": data.policies}
        if len(data.policies) < 2:  # One policy has no order to agree on.
            notes.append(f"task {data.task!r} has {len(data.policies)} policy; need 2 to correlate")
            row.update({m: None for m in METRICS})
            row.update(ci95={m: None for m in METRICS}, valid_reps={m: 0 for m in METRICS})
        else:
            point = _point(data.sim, data.real)
            row.update(point)
            sim, real = resample_task(rng, data, spec.reps)
            reps = chunked_metrics(sim, real)
            row["ci95"], row["valid_reps"] = _intervals(reps, spec.level)
            sims.append(sim)
            reals.append(real)
            task_reps.append(reps)
            points.append(point)
        tasks[data.task] = row
    return {
        "tasks": tasks,
        "pooled": _pooled(study, sims, reals, task_reps, points, spec),
        "method": method(spec, study),
        "warnings": notes,
    }


def _pooled(
    study: Study,
    sims: list[Array],
    reals: list[Array],
    task_reps: list[dict[str, Array]],
    points: list[dict[str, float | None]],
    spec: BootstrapSpec,
) -> dict[str, Any]:
    """Every (task, policy) point of the tasks with ≥ 2 policies, as one sample."""
    if not sims:
        empty = {m: None for m in METRICS}
        return {**empty, "n_points": 0, "n_tasks": 0, "ci95": dict(empty), "mean_over_tasks": {}}
    data = [t for t in study.tasks() if len(t.policies) >= 2]
    out: dict[str, Any] = _point(
        np.concatenate([t.sim for t in data]), np.concatenate([t.real for t in data])
    )
    out["n_points"] = sum(len(t.policies) for t in data)
    out["n_tasks"] = len(data)
    reps = chunked_metrics(np.concatenate(sims, axis=1), np.concatenate(reals, axis=1))
    out["ci95"], out["valid_reps"] = _intervals(reps, spec.level)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # A replicate undefined on every task.
        mean_reps = {m: np.nanmean(np.stack([r[m] for r in task_reps]), axis=0) for m in METRICS}
    mean_ci, _ = _intervals(mean_reps, spec.level)
    out["mean_over_tasks"] = {**_mean_over_tasks(points), "ci95": mean_ci}
    return out


def method(spec: BootstrapSpec, study: Study) -> dict[str, Any]:
    """What the intervals are, stated in the output."""
    counted = sum(e.sim_n is not None for e in study.entries)
    counted_real = sum(e.real_n is not None for e in study.entries)
    return {
        "interval": f"{spec.level:.0%} percentile bootstrap",
        "reps": spec.reps,
        "seed": spec.seed,
        "level": spec.level,
        "resampling": (
            "per task: policies drawn with replacement, then each drawn policy's sim and real "
            "successes redrawn from Binomial(n, p) where its episode count n is known"
        ),
        "episode_counts_known": {
            "sim": f"{counted} of {len(study.entries)}",
            "real": f"{counted_real} of {len(study.entries)}",
        },
        "pooled": (
            "every (task, policy) point of the tasks with ≥ 2 policies as one sample, "
            "resampled within each task (stratified); mean_over_tasks averages the per-task values"
        ),
        "undefined": "a replicate where a metric is undefined (a constant sample) is dropped; "
        "valid_reps counts the rest",
    }
