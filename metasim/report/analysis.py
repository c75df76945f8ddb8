"""The numbers behind the report's plots: per-level success against nominal, factor
effects, the factor x task matrix and performance profiles.

These are small, exact computations on the episode rows (see shared METRICS.md,
"Sensitivity"): success at a level minus success at the nominal level, with Newcombe's
hybrid score interval for a difference of two proportions built from Wilson intervals.
They are kept here (rather than imported from `metasim.stats.sensitivity`) so the report
reads any run folder, whatever that module's API becomes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from metasim.report.data import Episode, Run
from metasim.stats import iqm as stats_iqm
from metasim.stats import newcombe_interval, score_distribution, success_interval


@dataclass(frozen=True)
class LevelStat:
    """Success at one level of one factor (on one task, or all tasks when task is None)."""

    factor: str
    level: Any
    task: str | None
    k: int
    n: int
    low: float  # Wilson 95% interval of the rate
    high: float
    diff: float  # rate - nominal rate (NaN when either group is empty)
    diff_low: float
    diff_high: float
    nominal: bool = False  # the factor's nominal level (diff is 0 by definition)

    @property
    def rate(self) -> float:
        return self.k / self.n if self.n else float("nan")


def difference(k1: int, n1: int, k0: int, n0: int) -> tuple[float, float, float]:
    """p1 - p0 with its 95% Newcombe interval (`metasim.stats.newcombe_interval`).

    The difference is NaN when a group is empty, and its interval then is the whole
    (-1, 1): nothing is known about it.
    """
    lo, hi = newcombe_interval(k1, n1, k0, n0)
    d = k1 / n1 - k0 / n0 if n1 and n0 else math.nan
    return d, max(lo, -1.0), min(hi, 1.0)


def fmt_level(value: Any) -> str:
    """A factor level for labels: floats to 4 significant digits, lists element-wise."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(fmt_level(v) for v in value) + "]"
    return str(value)


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def factor_levels(run: Run) -> dict[str, list[Any]]:
    """Each factor's levels seen in the run, nominal first, the rest in sorted order."""
    nominal = run.nominal
    out: dict[str, list[Any]] = {}
    for name, nom in nominal.items():
        seen = {_key(e.factors.get(name)): e.factors.get(name) for e in run.episodes}
        seen.pop(_key(nom), None)
        rest = sorted(seen.values(), key=lambda v: (not isinstance(v, int | float), str(v), v))
        out[name] = [nom, *(v for v in rest if v is not None)]
    return out


def _is_nominal(e: Episode, nominal: dict[str, Any], skip: str | None = None) -> bool:
    return all(_key(e.factors.get(f)) == _key(v) for f, v in nominal.items() if f != skip)


def _group(eps: Sequence[Episode], run: Run, factor: str, level: Any) -> list[Episode]:
    """Episodes at `factor == level` with every other factor nominal (a one-factor-at-a-
    time contrast); when the design has none (random or Sobol grids), all episodes at
    that level (the marginal)."""
    at = [e for e in eps if _key(e.factors.get(factor)) == _key(level)]
    paired = [e for e in at if _is_nominal(e, run.nominal, skip=factor)]
    return paired or at


def level_stats(run: Run, task: str | None = None) -> list[LevelStat]:
    """A LevelStat for every level of every factor, pooled over tasks when task is None."""
    eps = [e for e in run.episodes if task is None or e.task == task]
    out: list[LevelStat] = []
    for factor, levels in factor_levels(run).items():
        base = _group(eps, run, factor, levels[0])
        k0, n0 = sum(e.success for e in base), len(base)
        for level in levels:
            group = _group(eps, run, factor, level)
            k, n = sum(e.success for e in group), len(group)
            lo, hi = success_interval(k, n)
            d, dlo, dhi = difference(k, n, k0, n0)
            nom = level is levels[0]
            out.append(LevelStat(factor, level, task, k, n, lo, hi, d, dlo, dhi, nom))
    return out


def worst_levels(stats: Sequence[LevelStat]) -> dict[str, LevelStat]:
    """Per factor, the off-nominal level with the largest drop against nominal."""
    out: dict[str, LevelStat] = {}
    for s in stats:
        if s.nominal or math.isnan(s.diff):
            continue
        best = out.get(s.factor)
        if best is None or s.diff < best.diff:
            out[s.factor] = s
    return out


def ranked_effects(run: Run) -> list[LevelStat]:
    """Factors ordered by their worst drop (pooled over tasks), most harmful first."""
    return sorted(worst_levels(level_stats(run)).values(), key=lambda s: s.diff)


def effect_matrix(run: Run, factors: Sequence[str]) -> np.ndarray:
    """(F, T) worst-level success drop of each factor on each task (NaN when unknown)."""
    out = np.full((len(factors), len(run.tasks)), np.nan)
    for j, task in enumerate(run.tasks):
        worst = worst_levels(level_stats(run, task))
        for i, factor in enumerate(factors):
            if factor in worst:
                out[i, j] = worst[factor].diff
    return out


def cell_scores(run: Run) -> np.ndarray:
    """(C * T,) success rate of every (cell, task) pair; the task rates without a grid."""
    rows = [row for cell in run.cells.values() for row in cell.tasks.values()]
    scores = [row.success_rate for row in rows if row.n]
    if not scores:
        scores = [row.success_rate for row in run.summary.tasks.values() if row.n]
    return np.asarray(scores, dtype=np.float64)


def profile(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """Performance profile F(tau) = fraction of scores > tau, shape (len(taus),); zeros
    when there are no scores (`metasim.stats.score_distribution` over one run)."""
    if scores.size == 0:
        return np.zeros_like(taus)
    return score_distribution(scores.reshape(1, -1), taus)


def iqm(scores: np.ndarray) -> float:
    """Interquartile mean of the scores (`metasim.stats.iqm`); NaN when there are none."""
    return stats_iqm(scores.reshape(1, -1)) if scores.size else math.nan


def task_rates(run: Run) -> np.ndarray:
    """(T,) success rate per task (pooled over cells)."""
    return np.asarray([row.success_rate for row in run.summary.tasks.values()], float)
