"""The summary of `metasim check xcheck --benchmark libero` (`<out>/xcheck_summary.json`
and the table it prints): per mode and task, both success rates with Wilson intervals and the paired
interval on their difference (`metasim.stats.paired`), and the disagreements by cause."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from metasim.libero.checks.xcheck import Comparison
from metasim.stats.intervals import success_interval
from metasim.stats.paired import PairedTable, paired_difference_interval


def summarize(comparisons: list[Comparison]) -> dict[str, Any]:
    """Per mode and task (and pooled): n, metasim and reference success rates (Wilson
    95%), the paired difference metasim - reference with Newcombe's paired 95% interval,
    the reference's rate once the hand may open, and the disagreements by cause."""
    out: dict[str, Any] = {}
    for mode in sorted({c.mode for c in comparisons}):
        rows = [c for c in comparisons if c.mode == mode]
        tasks = sorted({(c.suite, c.task) for c in rows})
        per = {f"{s}/{t}": _task_summary([c for c in rows if (c.suite, c.task) == (s, t)])
               for s, t in tasks}  # fmt: skip
        out[mode] = {"tasks": per, "pooled": _task_summary(rows)}
    return out


def _task_summary(rows: list[Comparison]) -> dict[str, Any]:
    ms = [c.metasim_success for c in rows]
    rs = [c.reference_success for c in rows]
    table = PairedTable.of(ms, rs)
    n = table.n
    causes: dict[str, int] = {}
    for c in rows:
        if c.cause != "agree":
            causes[c.cause] = causes.get(c.cause, 0) + 1
    rate = lambda k: {"rate": k / n if n else 0.0, "ci95": list(success_interval(k, n))}  # noqa: E731
    return {
        "n": n,
        "metasim": rate(sum(ms)),
        "reference": rate(sum(rs)),
        "reference_with_release": rate(sum(c.reference_success_with_release for c in rows)),
        "difference": table.difference,
        "difference_ci95_paired": list(paired_difference_interval(table)),
        "table": asdict(table),
        "causes": causes,
        "metasim_successes_also_reference": f"{table.a}/{table.a + table.b}",
        **_check_agreement(rows),
    }


def _check_agreement(rows: list[Comparison]) -> dict[str, Any]:
    """Closed loop: how often metasim's goal check on LIBERO's own states agrees with
    LIBERO's (both held at some step, or neither), and the largest gap in steps between
    their first successes."""
    loop = [c for c in rows if c.mode == "closed_loop"]
    if not loop:
        return {}
    agree = sum((c.metasim_check_step is not None) == c.reference_success for c in loop)
    gaps = [
        abs(c.metasim_check_step - c.reference_success_step)
        for c in loop
        if c.metasim_check_step is not None and c.reference_success_step is not None
    ]
    return {"goal_checks_agree": f"{agree}/{len(loop)}", "goal_check_max_gap": max(gaps, default=0)}


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2)


def format_summary(summary: dict[str, Any]) -> str:
    """A readable table: one row per task and mode, then the causes of disagreement."""
    lines = [
        f"{'mode':<12} {'task':<20} {'n':>3} {'metasim':>8} {'LIBERO':>7} {'+release':>8} "
        f"{'diff [95% paired]':>24}  ms->LIBERO"
    ]
    for mode, block in summary.items():
        for name, s in [*block["tasks"].items(), ("pooled", block["pooled"])]:
            lo, hi = s["difference_ci95_paired"]
            lines.append(
                f"{mode:<12} {name:<20} {s['n']:>3} {s['metasim']['rate']:>8.2f} "
                f"{s['reference']['rate']:>7.2f} {s['reference_with_release']['rate']:>8.2f} "
                f"{s['difference']:>+8.2f} [{lo:+.2f}, {hi:+.2f}]   "
                f"{s['metasim_successes_also_reference']}"
            )
        for cause, k in block["pooled"]["causes"].items():
            lines.append(f"  {mode}: {k} x {cause}")
        if "goal_checks_agree" in block["pooled"]:
            p = block["pooled"]
            lines.append(
                f"  {mode}: metasim's goal check on LIBERO's states agrees with LIBERO's in "
                f"{p['goal_checks_agree']} (first successes at most {p['goal_check_max_gap']} "
                "steps apart)"
            )
    return "\n".join(lines)
