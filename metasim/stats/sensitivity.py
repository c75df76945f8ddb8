"""Sensitivity of success to perturbation factors, from per-episode records.

Input is one entry per episode: ``levels[factor]`` is an ``(E,)`` array of the level of
each factor on each episode, ``success`` an ``(E,)`` boolean array. Everything here is a
pure function of those arrays (see shared METRICS.md, "Sensitivity").

- :func:`level_differences`: success at each level minus success at the nominal level,
  with Newcombe's hybrid score interval (default) or a bootstrap over episodes.
- :func:`main_effects`: marginal success at each level minus the overall success.
- :func:`variance_shares`: first- and total-order variance shares (discrete Sobol
  indices) from a full-factorial grid, by an exact ANOVA decomposition of cell means.
- :func:`rank_factors`: factors ordered by their worst drop against nominal.
Sobol indices from a Saltelli design (SALib) live in :mod:`metasim.stats.sobol`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metasim.stats.intervals import success_interval

DiffMethod = Literal["newcombe", "bootstrap"]
Baseline = Literal["nominal", "marginal"]


@dataclass(frozen=True)
class LevelDifference:
    """Success at one level of one factor against the nominal level of that factor."""

    factor: str
    level: Hashable
    k: int
    n: int
    nominal_k: int
    nominal_n: int
    difference: float  # rate(level) - rate(nominal); NaN if either group is empty
    low: float
    high: float

    @property
    def rate(self) -> float:
        return self.k / self.n if self.n else float("nan")

    @property
    def nominal_rate(self) -> float:
        return self.nominal_k / self.nominal_n if self.nominal_n else float("nan")


@dataclass(frozen=True)
class FactorEffect:
    """A factor's worst level: the largest drop in success against nominal, with its CI."""

    factor: str
    worst_level: Hashable
    effect: float
    low: float
    high: float


@dataclass(frozen=True)
class VarianceShares:
    """Variance decomposition of the cell-mean success over a full-factorial grid.

    ``first_order[f]`` is Var(E[Y | f]) / Var(Y) and ``total_order[f]`` is
    E[Var(Y | all but f)] / Var(Y), with the levels weighted uniformly, so these are the
    exact Sobol indices of the grid's cell means. ``noise_variance`` estimates how much of
    ``variance`` is binomial noise of the cell means (mean over cells of
    p(1 - p) / (n - 1)); when it is comparable to ``variance`` the shares are unreliable.
    """

    first_order: dict[str, float]
    total_order: dict[str, float]
    variance: float
    noise_variance: float

    @property
    def interaction(self) -> float:
        """Share of variance not explained by main effects: 1 - Σ first-order."""
        return 1.0 - sum(self.first_order.values()) if self.variance > 0 else 0.0


def records_to_arrays(
    records: Iterable[Mapping[str, Any]], factors: Sequence[str], success_key: str = "success"
) -> tuple[dict[str, NDArray[Any]], NDArray[np.bool_]]:
    """Split episode records (dicts) into ``({factor: (E,) levels}, (E,) success)``."""
    rows = list(records)
    levels = {f: np.asarray([r[f] for r in rows]) for f in factors}
    return levels, np.asarray([bool(r[success_key]) for r in rows], dtype=bool)


def _check(
    levels: Mapping[str, ArrayLike], success: ArrayLike
) -> tuple[dict[str, NDArray[Any]], NDArray[np.bool_]]:
    ok: NDArray[np.bool_] = np.asarray(success).astype(bool).reshape(-1)
    arrays: dict[str, NDArray[Any]] = {f: np.asarray(v).reshape(-1) for f, v in levels.items()}
    for f, v in arrays.items():
        if v.shape != ok.shape:
            raise ValueError(f"factor {f!r} has {v.size} entries, success has {ok.size}")
    return arrays, ok


def factor_levels(values: NDArray[Any]) -> list[Hashable]:
    """Distinct levels, sorted when they are comparable, else in order of appearance."""
    distinct = list(dict.fromkeys(values.tolist()))
    try:
        return sorted(distinct)
    except TypeError:
        return distinct


def newcombe_interval(
    k1: int, n1: int, k2: int, n2: int, level: float = 0.95
) -> tuple[float, float]:
    """Newcombe's hybrid score interval (his method 10) for p1 - p2.

    Combines the Wilson intervals (l1, u1) and (l2, u2) of the two proportions:
    ``(d - sqrt((p1 - l1)² + (u2 - p2)²), d + sqrt((u1 - p1)² + (p2 - l2)²))``.
    Newcombe (1998), Statistics in Medicine 17:873–890.
    """
    if n1 == 0 or n2 == 0:
        return -1.0, 1.0
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = success_interval(k1, n1, level)
    l2, u2 = success_interval(k2, n2, level)
    d = p1 - p2
    return d - float(np.hypot(p1 - l1, u2 - p2)), d + float(np.hypot(u1 - p1, p2 - l2))


def bootstrap_difference_interval(
    k1: int, n1: int, k2: int, n2: int, level: float = 0.95, reps: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile interval for p1 - p2, resampling episodes within each group.

    Resampling n Bernoulli episodes with replacement is a Binomial(n, k/n) draw, so the
    bootstrap is drawn directly from the two binomials.
    """
    if n1 == 0 or n2 == 0:
        return -1.0, 1.0
    rng = np.random.default_rng(seed)
    d = rng.binomial(n1, k1 / n1, reps) / n1 - rng.binomial(n2, k2 / n2, reps) / n2
    alpha = (1.0 - level) / 2
    lo, hi = np.percentile(d, [100 * alpha, 100 * (1 - alpha)])
    return float(lo), float(hi)


def _others_nominal(
    arrays: Mapping[str, NDArray[Any]], nominal: Mapping[str, Hashable], factor: str
) -> NDArray[np.bool_]:
    mask = np.ones(next(iter(arrays.values())).shape, dtype=bool)
    for f, v in arrays.items():
        if f != factor:
            mask &= v == nominal[f]
    return mask


def level_differences(
    levels: Mapping[str, ArrayLike],
    success: ArrayLike,
    nominal: Mapping[str, Hashable],
    level: float = 0.95,
    method: DiffMethod = "newcombe",
    baseline: Baseline = "nominal",
    reps: int = 2000,
    seed: int = 0,
) -> list[LevelDifference]:
    """Per factor and level: success at that level minus success at the nominal level.

    ``baseline="nominal"`` (default) compares episodes where only this factor varies and
    every other factor sits at its nominal level; this is right for one-factor-at-a-time
    designs and unbiased on a full factorial. ``baseline="marginal"`` pools over the other
    factors (factorial designs only; on a one-at-a-time design it mixes in the other
    factors' perturbations). The nominal level itself is listed with difference 0.
    The interval is Newcombe's hybrid score interval, or with ``method="bootstrap"`` a
    percentile bootstrap over episodes.
    """
    arrays, ok = _check(levels, success)
    missing = [f for f in arrays if f not in nominal]
    if missing:
        raise ValueError(f"no nominal level given for factors {missing}")
    out: list[LevelDifference] = []
    for factor, values in arrays.items():
        if baseline == "nominal":
            scope = _others_nominal(arrays, nominal, factor)
        elif baseline == "marginal":
            scope = np.ones_like(ok)
        else:
            raise ValueError(f"unknown baseline {baseline!r}")
        base = scope & (values == nominal[factor])
        k0, n0 = int(ok[base].sum()), int(base.sum())
        for lev in factor_levels(values[scope]):
            sel = scope & (values == lev)
            k, n = int(ok[sel].sum()), int(sel.sum())
            if method == "newcombe":
                lo, hi = newcombe_interval(k, n, k0, n0, level)
            elif method == "bootstrap":
                lo, hi = bootstrap_difference_interval(k, n, k0, n0, level, reps, seed)
            else:
                raise ValueError(f"unknown method {method!r}; expected 'newcombe' or 'bootstrap'")
            diff = k / n - k0 / n0 if n and n0 else float("nan")
            out.append(LevelDifference(factor, lev, k, n, k0, n0, diff, lo, hi))
    return out


def main_effects(
    levels: Mapping[str, ArrayLike], success: ArrayLike
) -> dict[str, dict[Hashable, float]]:
    """Marginal success at each level minus the overall success rate, per factor.

    On a balanced full-factorial design these are the ANOVA main effects; they sum to 0
    over the levels of each factor (weighted by episodes per level in general).
    """
    arrays, ok = _check(levels, success)
    grand = float(ok.mean())
    return {
        f: {lev: float(ok[v == lev].mean()) - grand for lev in factor_levels(v)}
        for f, v in arrays.items()
    }


def cell_means(
    levels: Mapping[str, ArrayLike], success: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Success rate and episode count per cell of a full-factorial grid, each ``(L1, ..., LF)``.

    Axis ``i`` follows the factor order of ``levels`` and the level order of
    :func:`factor_levels`. Raises ``ValueError`` if some cell has no episode.
    """
    arrays, ok = _check(levels, success)
    if not arrays:
        raise ValueError("need at least one factor")
    shape, codes = [], []
    for values in arrays.values():
        levs = factor_levels(values)
        index = {lev: i for i, lev in enumerate(levs)}
        shape.append(len(levs))
        codes.append(np.array([index[v] for v in values.tolist()], dtype=np.int64))
    flat = np.ravel_multi_index(tuple(codes), tuple(shape))
    size = int(np.prod(shape))
    counts = np.bincount(flat, minlength=size)
    hits = np.bincount(flat, weights=ok.astype(np.float64), minlength=size)
    if np.any(counts == 0):
        missing = int(np.sum(counts == 0))
        raise ValueError(f"not a full factorial: {missing} of {size} cells have no episode")
    return (hits / counts).reshape(shape), counts.reshape(shape)


def variance_shares(levels: Mapping[str, ArrayLike], success: ArrayLike) -> VarianceShares:
    """First- and total-order variance shares of success over a full-factorial grid.

    With cell means Y (levels weighted uniformly): first order S_f = Var(E[Y|f]) / Var(Y),
    total order S_Tf = E[Var(Y | rest)] / Var(Y). On an additive response S_f = S_Tf; a
    pure interaction has S_f = 0 < S_Tf. If Var(Y) is 0 every share is 0.
    """
    y, counts = cell_means(levels, success)
    names = list(levels)
    total = float(y.var())
    with np.errstate(divide="ignore", invalid="ignore"):
        noise = np.where(counts > 1, y * (1 - y) / (counts - 1), 0.0)
    first: dict[str, float] = {}
    tot: dict[str, float] = {}
    for i, name in enumerate(names):
        others = tuple(j for j in range(y.ndim) if j != i)
        v_first = float(y.mean(axis=others).var()) if others else total
        v_total = float(y.var(axis=i).mean())
        first[name] = v_first / total if total > 0 else 0.0
        tot[name] = v_total / total if total > 0 else 0.0
    return VarianceShares(first, tot, total, float(noise.mean()))


def rank_factors(differences: Sequence[LevelDifference]) -> list[FactorEffect]:
    """Each factor's worst level (most negative difference), factors worst first.

    Factors whose every level is empty are ranked last with a NaN effect.
    """
    worst: dict[str, LevelDifference] = {}
    for d in differences:
        cur = worst.get(d.factor)
        if cur is None or np.isnan(cur.difference) or d.difference < cur.difference:
            worst[d.factor] = d
    effects = [FactorEffect(f, d.level, d.difference, d.low, d.high) for f, d in worst.items()]
    return sorted(effects, key=lambda e: (np.isnan(e.effect), e.effect))


def sensitivity_summary(
    levels: Mapping[str, ArrayLike],
    success: ArrayLike,
    nominal: Mapping[str, Hashable],
    level: float = 0.95,
    method: DiffMethod = "newcombe",
) -> dict[str, dict[str, Any]]:
    """Per factor, worst first: effect (worst drop vs nominal), its CI, and every level.

    Shaped for ``summary.json``'s ``"sensitivity"``; level keys are ``str(level)``.
    """
    diffs = level_differences(levels, success, nominal, level=level, method=method)
    out: dict[str, dict[str, Any]] = {}
    for eff in rank_factors(diffs):
        per_level = {
            str(d.level): {
                "rate": d.rate,
                "n": d.n,
                "difference": d.difference,
                "low": d.low,
                "high": d.high,
            }
            for d in diffs
            if d.factor == eff.factor
        }
        out[eff.factor] = {
            "effect": eff.effect,
            "low": eff.low,
            "high": eff.high,
            "worst_level": str(eff.worst_level),
            "levels": per_level,
        }
    return out
