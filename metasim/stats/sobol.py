"""Sobol sensitivity indices from a Saltelli design, through SALib (optional extra).

For continuous perturbation factors sampled by the Saltelli scheme rather than on a
factorial grid. Install with ``pip install metasim[stats]``; without SALib these functions
raise ``ImportError`` with that hint. On a full-factorial grid use
:func:`metasim.stats.sensitivity.variance_shares` instead, which needs no extra package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray


@dataclass(frozen=True)
class SobolIndices:
    """First-order ``S1`` and total-order ``ST`` indices per factor, with CI half-widths."""

    first_order: dict[str, float]
    total_order: dict[str, float]
    first_order_conf: dict[str, float]
    total_order_conf: dict[str, float]


def _salib() -> tuple[Any, Any]:
    try:
        from SALib.analyze import sobol as analyze
        from SALib.sample import sobol as sample
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("Sobol indices need SALib: pip install 'metasim[stats]'") from err
    return sample, analyze


def _problem(bounds: Mapping[str, tuple[float, float]]) -> dict[str, Any]:
    return {
        "num_vars": len(bounds),
        "names": list(bounds),
        "bounds": [[float(lo), float(hi)] for lo, hi in bounds.values()],
    }


def saltelli_design(
    bounds: Mapping[str, tuple[float, float]], n: int, seed: int = 0
) -> NDArray[np.float64]:
    """Saltelli sample of the factors (first and total order only), shape ``(n (F + 2), F)``.

    ``bounds`` maps each factor to its (low, high) range; columns follow its order. ``n``
    should be a power of two (Sobol sequence).
    """
    sample, _ = _salib()
    return np.asarray(
        sample.sample(_problem(bounds), n, calc_second_order=False, seed=seed), np.float64
    )


def sobol_indices(
    bounds: Mapping[str, tuple[float, float]],
    outputs: ArrayLike,
    level: float = 0.95,
    seed: int = 0,
) -> SobolIndices:
    """Sobol first- and total-order indices of ``outputs`` ``(n (F + 2),)``.

    ``outputs`` are the results (e.g. success 0/1 or a success rate) of the rows of
    :func:`saltelli_design` with the same ``bounds``, in order.
    """
    _, analyze = _salib()
    y = np.asarray(outputs, np.float64).reshape(-1)
    res = analyze.analyze(_problem(bounds), y, calc_second_order=False, conf_level=level, seed=seed)
    names = list(bounds)

    def named(key: str) -> dict[str, float]:
        return {name: float(v) for name, v in zip(names, res[key], strict=True)}

    return SobolIndices(named("S1"), named("ST"), named("S1_conf"), named("ST_conf"))
