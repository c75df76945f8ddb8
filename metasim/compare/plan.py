"""`metasim compare --plan`: how many episodes would settle the pooled difference.

Assume the runs go on as they went: the pooled table of pairs keeps its shares of the
four kinds (both succeed, only A, only B, neither). Scaling the table to a larger episode
count per task and cell, find the smallest count at which the pooled 95% interval of
B − A (Newcombe's paired one, or the unpaired one for unpaired runs) excludes 0, up to
the eval's limit of episodes per task and cell. No difference observed (as many pairs
favour A as B) cannot be settled by more episodes: the plan says so.

This is a planning figure, not a stopping rule: testing again after adding episodes
chosen from the data inflates the false-positive rate (optional stopping), so a decision
made at the new count should be treated as exploratory, or the count fixed in advance.
"""

from __future__ import annotations

from typing import Any

from metasim.evaluate.config import MAX_EPISODES
from metasim.stats.paired import PairedTable, paired_difference_interval
from metasim.stats.sensitivity import newcombe_interval

CAVEAT = (
    "assumes the observed shares of pair outcomes continue; re-testing after adding "
    "episodes chosen from the data is optional stopping (treat the decision as exploratory)"
)


def _scaled(counts: list[int], total: int) -> list[int]:
    """`counts` scaled to sum to `total`, by largest remainders."""
    n = sum(counts)
    exact = [c * total / n for c in counts]
    out = [int(x) for x in exact]
    order = sorted(range(len(counts)), key=lambda i: exact[i] - out[i], reverse=True)
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def _excludes_zero(counts: list[int], total: int, paired: bool) -> bool:
    a, b, c, d = _scaled(counts, total)
    if paired:
        lo, hi = paired_difference_interval(PairedTable(a, c, b, d))  # (B, A): B - A
    else:  # counts are (k_a, n_a - k_a, k_b, n_b - k_b) with n_a = n_b
        lo, hi = newcombe_interval(c, c + d, a, a + b)
    return bool(lo > 0 or hi < 0)


def episodes_needed(counts: list[int], per_cell: int, paired: bool) -> int | None:
    """The smallest episodes per task and cell (>= `per_cell`) at which the scaled pooled
    interval excludes 0, or None if none up to MAX_EPISODES does. `counts` are the
    pooled table (a, b, c, d) when paired, else (k_a, n_a - k_a, k_b, n_b - k_b)."""
    total = sum(counts)
    if total == 0 or per_cell < 1:
        return None
    units = total / per_cell  # pairs per episode-per-cell (tasks x cells)

    def ok(e: int) -> bool:
        return _excludes_zero(counts, max(1, round(units * e)), paired)

    if ok(per_cell):
        return per_cell
    hi = per_cell
    while not ok(hi):
        if hi >= MAX_EPISODES:
            return None
        hi = min(MAX_EPISODES, hi * 2)
    lo = hi // 2 if hi > per_cell else per_cell
    while hi - lo > 1:  # ok(hi), not ok(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def plan(comparison: dict[str, Any]) -> dict[str, Any]:
    """The plan of one comparison (a result of `compare_pair`)."""
    runs = comparison["runs"]
    per_cell = min(int(runs[s]["episodes_per_cell"] or 0) for s in ("a", "b"))
    pooled = comparison["pooled"]
    a, b = pooled["a"], pooled["b"]
    if comparison["paired"]:
        disc = pooled["discordant"]
        both = a["successes"] - disc["a_only"]
        counts = [
            both,
            disc["a_only"],
            disc["b_only"],
            a["n"] - both - disc["a_only"] - disc["b_only"],
        ]
    else:
        counts = [a["successes"], a["n"] - a["successes"], b["successes"], b["n"] - b["successes"]]
    out: dict[str, Any] = {"episodes_per_cell_now": per_cell, "assumes": CAVEAT}
    if pooled["diff"] == 0:
        return {**out, "episodes_per_cell": None, "why": "no difference observed (B − A = 0)"}
    need = episodes_needed(counts, per_cell, comparison["paired"])
    if need is None:
        why = f"the interval still includes 0 at {MAX_EPISODES} episodes per task and cell"
        return {**out, "episodes_per_cell": None, "why": why}
    return {
        **out,
        "episodes_per_cell": need,
        "already_settled": need == per_cell,
        "commands": [
            f"metasim eval --resume {runs[s]['path']} episodes={need}" for s in ("a", "b")
        ],
    }
