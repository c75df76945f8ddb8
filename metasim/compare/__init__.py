"""`metasim compare`: is run B better than run A, on which tasks, and how sure are we.

`compare_runs` loads the run folders, refuses those that cannot be compared, pairs the
episodes and returns one JSON-ready result: the comparison of the first two runs at the
top level (`tasks`, `pooled`, `aggregate`, ...), and with three or more runs every pair
(i < j) under `comparisons`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metasim.compare.analysis import compare_pair
from metasim.compare.pairing import Pairing, check_comparable, pair_runs
from metasim.compare.plan import plan
from metasim.report.data import Run, load_run

__all__ = ["Pairing", "compare_loaded", "compare_runs", "pair_runs"]


def compare_runs(
    paths: Sequence[str | Path],
    unpaired_ok: bool = False,
    reps: int = 2000,
    seed: int = 0,
    with_plan: bool = False,
) -> dict[str, Any]:
    """Compare the runs in `paths` (at least two); see the module doc."""
    return compare_loaded([load_run(p) for p in paths], unpaired_ok, reps, seed, with_plan)


def compare_loaded(
    runs: list[Run],
    unpaired_ok: bool = False,
    reps: int = 2000,
    seed: int = 0,
    with_plan: bool = False,
) -> dict[str, Any]:
    """`compare_runs` on runs already loaded; `with_plan` adds each comparison's
    `plan` (`metasim compare --plan`, `compare.plan`)."""
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    check_comparable(runs, unpaired_ok)
    comparisons = []
    for a, b in itertools.combinations(runs, 2):
        result, _ = compare_pair(pair_runs(a, b, unpaired_ok), reps=reps, seed=seed)
        if with_plan:
            result["plan"] = plan(result)
        comparisons.append(result)
    out = dict(comparisons[0])
    out["warnings"] = same_folder(runs) + warnings(comparisons)
    if len(runs) > 2:
        out["comparisons"] = comparisons
    return out


def same_folder(runs: list[Run]) -> list[str]:
    """A note for each run folder named more than once (`compare A A`): a run compared
    with itself pairs every episode with itself, so every difference is 0 by
    construction, not a finding."""
    out: list[str] = []
    first: dict[Path, int] = {}
    for i, run in enumerate(runs, 1):
        where = run.path.resolve()
        if where in first:
            out.append(
                f"{run.path} is run {first[where]} again (the same folder, arguments "
                f"{first[where]} and {i}): a run compared with itself differs nowhere by "
                "construction; name two different run folders"
            )
        else:
            first[where] = i
    return out


def warnings(comparisons: list[dict[str, Any]]) -> list[str]:
    """Plain notes: unpaired comparisons, episodes left out of a pairing."""
    out = []
    for c in comparisons:
        a, b = c["runs"]["a"]["path"], c["runs"]["b"]["path"]
        if not c["paired"]:
            out.append(
                f"{b} vs {a}: different seeds, so the comparison is UNPAIRED (independent "
                "samples): wider intervals and no McNemar test"
            )
        if c.get("unmatched_episodes"):
            out.append(
                f"{b} vs {a}: {c['unmatched_episodes']} episode(s) have no partner in the "
                "other run (different episode counts?) and are left out"
            )
    return out
