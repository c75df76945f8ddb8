"""Per-cell (or per-task) summaries of episodes: success with an interval, progress, steps.

A cell is any group of episodes that share a task and perturbation values. Inputs are the
per-episode arrays of that group, each ``(E,)``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from metasim.stats.intervals import Method, success_interval


@dataclass(frozen=True)
class CellSummary:
    """Success rate with its interval, mean progress and steps to success of one cell.

    ``progress`` is NaN when not recorded; ``steps_to_success`` (mean and median over the
    successful episodes only) is NaN when no episode succeeded or steps were not recorded.
    """

    k: int
    n: int
    rate: float
    low: float
    high: float
    progress: float
    steps_to_success_mean: float
    steps_to_success_median: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN becomes None)."""
        return {
            k: (None if isinstance(v, float) and np.isnan(v) else v)
            for k, v in asdict(self).items()
        }


def cell_summary(
    success: ArrayLike,
    progress: ArrayLike | None = None,
    steps: ArrayLike | None = None,
    level: float = 0.95,
    method: Method = "wilson",
) -> CellSummary:
    """Summarize one cell's episodes: success ``(E,)`` bool, progress and steps ``(E,)``."""
    ok = np.asarray(success, dtype=bool).reshape(-1)
    k, n = int(ok.sum()), int(ok.size)
    lo, hi = success_interval(k, n, level, method)
    prog = (
        float(np.mean(np.asarray(progress, np.float64)))
        if progress is not None and n
        else float("nan")
    )
    step_mean = step_median = float("nan")
    if steps is not None and k:
        won = np.asarray(steps, dtype=np.float64).reshape(-1)[ok]
        step_mean, step_median = float(won.mean()), float(np.median(won))
    rate = k / n if n else float("nan")
    return CellSummary(k, n, rate, lo, hi, prog, step_mean, step_median)


def summarize_cells(
    keys: Sequence[Hashable],
    success: ArrayLike,
    progress: ArrayLike | None = None,
    steps: ArrayLike | None = None,
    level: float = 0.95,
    method: Method = "wilson",
) -> dict[Hashable, CellSummary]:
    """:func:`cell_summary` for every distinct key; ``keys[i]`` names episode i's cell."""
    ok = np.asarray(success, dtype=bool).reshape(-1)
    if len(keys) != ok.size:
        raise ValueError(f"{len(keys)} keys for {ok.size} episodes")
    prog = None if progress is None else np.asarray(progress, np.float64).reshape(-1)
    stp = None if steps is None else np.asarray(steps, np.float64).reshape(-1)
    groups: dict[Hashable, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return {
        key: cell_summary(
            ok[idx],
            None if prog is None else prog[idx],
            None if stp is None else stp[idx],
            level,
            method,
        )
        for key, idx in groups.items()
    }
