"""The comparison of two runs: per task and pooled, and rliable's aggregates across tasks.

Per task (all cells pooled) and over all tasks pooled, each run's success k/n with its
Wilson 95% interval and the difference B − A:

- paired runs: Newcombe's method-10 interval for paired proportions
  (`stats.paired`) and McNemar's exact p-value; the unpaired interval of the same
  counts (`unpaired_ci95`) is given beside it, for scale;
- unpaired runs: Newcombe's hybrid score interval for independent samples and no
  McNemar p-value (`mcnemar_p` is null, `paired` false).

Across tasks: IQM, optimality gap, mean and median of each run's per-task rates and the
probability that B beats A on a task, with stratified bootstrap intervals over episodes
(`stats.episode_bootstrap`).
"""

from __future__ import annotations

from typing import Any

from metasim.compare.pairing import Pairing
from metasim.report.data import Episode, Run
from metasim.stats import success_interval
from metasim.stats.episode_bootstrap import (
    RateResamples,
    TaskOutcomes,
    compare_aggregates,
    resample_rates,
)
from metasim.stats.paired import PairedTable, mcnemar_exact_p, paired_difference_interval
from metasim.stats.sensitivity import newcombe_interval

PAIRED_METHOD = (
    "paired on (task, cell, episode, seed): Newcombe's method-10 interval for the "
    "difference of paired proportions, McNemar's exact test"
)
UNPAIRED_METHOD = (
    "UNPAIRED (the runs used different seeds, so no episode of one is an episode of the "
    "other): Newcombe's hybrid score interval for independent samples; no McNemar test"
)


def rate(k: int, n: int) -> dict[str, Any]:
    """One run's success on some episodes: k, n, k/n and the Wilson 95% interval."""
    lo, hi = success_interval(k, n)
    return {"successes": k, "n": n, "rate": k / n if n else 0.0, "ci95": [lo, hi]}


def paired_entry(table: PairedTable) -> dict[str, Any]:
    """The comparison of one set of pairs; `table` is (A, B) ordered: `b` = only A
    succeeded, `c` = only B succeeded."""
    k_a, k_b, n = table.a + table.b, table.a + table.c, table.n
    swapped = PairedTable(table.a, table.c, table.b, table.d)  # (B, A): difference B - A
    lo, hi = paired_difference_interval(swapped)
    return {
        "a": rate(k_a, n),
        "b": rate(k_b, n),
        "diff": swapped.difference,
        "diff_ci95": [lo, hi],
        "mcnemar_p": mcnemar_exact_p(table),
        "paired": True,
        "discordant": {"a_only": table.b, "b_only": table.c},
        "unpaired_ci95": list(newcombe_interval(k_b, n, k_a, n)),
    }


def unpaired_entry(k_a: int, n_a: int, k_b: int, n_b: int) -> dict[str, Any]:
    """The comparison of two independent samples."""
    diff = (k_b / n_b if n_b else 0.0) - (k_a / n_a if n_a else 0.0)
    return {
        "a": rate(k_a, n_a),
        "b": rate(k_b, n_b),
        "diff": diff,
        "diff_ci95": list(newcombe_interval(k_b, n_b, k_a, n_a)),
        "mcnemar_p": None,
        "paired": False,
    }


def _table(pairs: list[tuple[Episode, Episode]]) -> PairedTable:
    return PairedTable.of([x.success for x, _ in pairs], [y.success for _, y in pairs])


def task_outcomes(p: Pairing) -> dict[str, TaskOutcomes]:
    """Each task's counts (a paired table when the runs are paired)."""
    out = {}
    for task in p.tasks:
        if p.paired:
            out[task] = TaskOutcomes.paired(_table(p.pairs[task]))
        else:
            a, b = p.outcomes("a", task), p.outcomes("b", task)
            out[task] = TaskOutcomes(
                sum(e.success for e in a), len(a), sum(e.success for e in b), len(b)
            )
    return out


def _entry(t: TaskOutcomes) -> dict[str, Any]:
    if t.table is not None:
        return paired_entry(t.table)
    return unpaired_entry(t.k_a, t.n_a, t.k_b, t.n_b)


def pooled_outcomes(outcomes: list[TaskOutcomes], paired: bool) -> TaskOutcomes:
    """All tasks' episodes as one sample (one paired table when paired)."""
    if paired:
        tables = [t.table for t in outcomes if t.table is not None]
        total = PairedTable(*(sum(getattr(t, f) for t in tables) for f in "abcd"))
        return TaskOutcomes.paired(total)
    return TaskOutcomes(
        *(sum(getattr(t, f) for t in outcomes) for f in ("k_a", "n_a", "k_b", "n_b"))
    )


def discordant(p: Pairing) -> list[dict[str, Any]]:
    """The pairs where exactly one run succeeded, in task, cell, episode order."""
    out = []
    for task in p.tasks:
        for x, y in p.pairs.get(task, []):
            if x.success != y.success:
                out.append(
                    {
                        "task": task,
                        "cell": x.cell,
                        "episode": x.episode,
                        "seed": x.seed,
                        "a": x.success,
                        "b": y.success,
                        "factors": x.factors,
                        "error_a": x.error,
                        "error_b": y.error,
                    }
                )
    return out


def describe_run(run: Run) -> dict[str, Any]:
    policy = run.config.get("policy")
    return {
        "path": str(run.path),
        "label": run.label,
        "policy": policy.get("name") or policy.get("kind") if isinstance(policy, dict) else None,
        "seed": run.config.get("seed"),
        "backend": run.config.get("backend"),
        "episodes": len(run.episodes),
        "episodes_per_cell": run.config.get("episodes"),
    }


def compare_pair(
    p: Pairing, reps: int = 2000, seed: int = 0
) -> tuple[dict[str, Any], RateResamples]:
    """The comparison of B with A (module doc) and the bootstrap resamples of their rates."""
    outcomes = task_outcomes(p)
    rs = resample_rates(list(outcomes.values()), reps=reps, seed=seed)
    aggregate = compare_aggregates(rs)
    aggregate["method"] = (
        f"per-task success rates (one run each: a (1, {len(p.tasks)}) score matrix per run); "
        f"percentile intervals from {reps} stratified bootstrap draws of "
        + ("the episode pairs" if p.paired else "each run's episodes, independently")
        + f" within each task (seed {seed}): episode noise, not seed-to-seed spread"
    )
    aggregate["probability_of_improvement"]["meaning"] = "P(B > A) on a task, ties 1/2"
    result = {
        "runs": {"a": describe_run(p.a), "b": describe_run(p.b)},
        "paired": p.paired,
        "method": PAIRED_METHOD if p.paired else UNPAIRED_METHOD,
        "tasks": {task: _entry(t) for task, t in outcomes.items()},
        "pooled": _entry(pooled_outcomes(list(outcomes.values()), p.paired)),
        "aggregate": aggregate,
        "discordant": discordant(p),
        "unmatched_episodes": p.unmatched,
    }
    return result, rs
