"""Which episodes of two runs are the same episode, and whether two runs can be paired.

Episode k of a task and cell starts from the state drawn from `episode_seed(seed, k)`
whatever `num_envs`, so two runs of the same suite, grid and seed ran the same episodes
with different policies (or backends): matched on (task, cell, episode, seed), their
outcomes are paired. Runs of a different suite or grid are refused, naming the field;
runs of a different seed are refused too unless the caller accepts an unpaired
comparison (independent samples), which is then said plainly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from metasim.errors import MetasimInputError
from metasim.report.data import Episode, Run

Key = tuple[str, str, int, int]  # task, cell, episode, seed
SOURCE = "metasim compare"


@dataclass(frozen=True)
class Pairing:
    """Two runs A and B on the same tasks; `pairs[task]` holds the matched episodes
    (A's, B's) when `paired`, else `a[task]` and `b[task]` are independent samples."""

    a: Run
    b: Run
    tasks: list[str]
    paired: bool
    pairs: dict[str, list[tuple[Episode, Episode]]]
    unmatched: int  # episodes of either run with no partner (0 when unpaired)

    def outcomes(self, side: str, task: str) -> list[Episode]:
        """A task's episodes of run `side` ("a" or "b"): the matched ones when paired."""
        if self.paired:
            return [pair[0 if side == "a" else 1] for pair in self.pairs[task]]
        run = self.a if side == "a" else self.b
        return [e for e in run.episodes if e.task == task]


def key(e: Episode) -> Key:
    return (e.task, e.cell, e.episode, e.seed)


def _tasks(run: Run) -> list[str]:
    suite = run.config.get("suite")
    if isinstance(suite, dict) and isinstance(suite.get("tasks"), list):
        return [str(t) for t in suite["tasks"]]
    return run.tasks


def _grid(run: Run) -> dict[str, dict[str, Any]]:
    return {cell_id: dict(cell.factors) for cell_id, cell in run.cells.items()}


def _name(run: Run, field: str) -> str:
    value = run.config.get(field)
    if isinstance(value, dict):
        return str(value.get("name", "?"))
    return "?" if value is None else str(value)


def mismatches(a: Run, b: Run) -> list[str]:
    """What makes `b` impossible to compare with `a` at all (suite, grid), one line each,
    naming the field."""
    out = []
    ta, tb = _tasks(a), _tasks(b)
    if ta != tb:
        only_a = [t for t in ta if t not in tb]
        only_b = [t for t in tb if t not in ta]
        what = f"only in {a.path}: {only_a or 'none'}; only in {b.path}: {only_b or 'none'}"
        if not only_a and not only_b:
            what = "the same tasks in another order"
        out.append(
            f"config.suite.tasks differ (suite {_name(a, 'suite')!r} vs "
            f"{_name(b, 'suite')!r}): {what}"
        )
    ga, gb = _grid(a), _grid(b)
    if ga != gb:
        pa, pb = a.config.get("perturbation"), b.config.get("perturbation")
        out.append(
            f"the perturbation grids differ (config.perturbation {pa!r} vs {pb!r}; "
            f"summary.json cells: {sorted(ga)} vs {sorted(gb)}, or their factor values)"
        )
    return out


def check_comparable(runs: list[Run], unpaired_ok: bool) -> None:
    """Refuse runs that cannot be compared with the first: another suite or grid always;
    another seed unless `unpaired_ok`; a run without episodes.parquet."""
    problems, seeds = [], []
    for run in runs:
        if not run.episodes:
            problems.append(
                f"{run.path}: episodes.parquet is missing or empty; compare needs the "
                "episodes (re-run `metasim eval` with the same out= to write it)"
            )
    first = runs[0]
    for run in runs[1:]:
        problems += [f"{run.path} vs {first.path}: {m}" for m in mismatches(first, run)]
        sa, sb = first.config.get("seed"), run.config.get("seed")
        if sa != sb and not unpaired_ok:
            seeds.append(
                f"{run.path} vs {first.path}: config.seed differs ({sb!r} vs {sa!r}), so "
                "their episodes started from different states and cannot be paired"
            )
    if problems:  # --unpaired would not help: another suite, grid, or no episodes
        hint = "Compare runs of the same suite and perturbation grid, each with its episodes"
        raise MetasimInputError(SOURCE, problems + seeds, hint)
    if seeds:
        hint = (
            "Paired comparison needs runs of the same seed; pass --unpaired to compare "
            "runs of different seeds as independent samples"
        )
        raise MetasimInputError(SOURCE, seeds, hint)


def pair_runs(a: Run, b: Run, unpaired_ok: bool = False) -> Pairing:
    """Match the episodes of A and B on (task, cell, episode, seed) (module doc).

    Runs of different seeds (accepted with `unpaired_ok`) are compared unpaired; runs
    of the same seed whose episodes match nowhere are refused."""
    check_comparable([a, b], unpaired_ok)
    # the tasks as the episodes name them (scene names: `libero_spatial_1` for the
    # suite's `libero:libero_spatial/1`); the config's references serve `mismatches`
    tasks = a.tasks or _tasks(a)
    if a.config.get("seed") != b.config.get("seed"):
        return Pairing(a, b, tasks, False, {}, 0)
    b_by_key = {key(e): e for e in b.episodes}
    pairs: dict[str, list[tuple[Episode, Episode]]] = {t: [] for t in tasks}
    for e in a.episodes:
        partner = b_by_key.get(key(e))
        if partner is not None and e.task in pairs:
            pairs[e.task].append((e, partner))
    matched = sum(len(p) for p in pairs.values())
    if matched == 0 and unpaired_ok:  # what the hint below offers
        return Pairing(a, b, tasks, False, {}, 0)
    if matched == 0:
        raise MetasimInputError(
            SOURCE,
            [
                f"{b.path} vs {a.path}: no episode matches on (task, cell, episode, seed) "
                "although config.seed is the same (episode seeds derived differently?)"
            ],
            "Pass --unpaired to compare them as independent samples",
        )
    unmatched = len(a.episodes) + len(b.episodes) - 2 * matched
    return Pairing(a, b, tasks, True, pairs, unmatched)
