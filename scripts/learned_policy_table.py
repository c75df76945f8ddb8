"""One checkpoint, two or three harnesses: per-task success of `metasim eval` and of
LeRobot's own `lerobot-eval`, each with its Wilson 95% interval, and Newcombe's 95% interval
on the difference (the two sides draw their episodes independently: unpaired); with
`--warp`, also a second metasim run of the same episodes (`backend=warp render=warp`) and
the paired difference metasim - warp (`metasim compare`: Newcombe's paired interval,
McNemar's exact p).

    python scripts/learned_policy_table.py --metasim runs/dp-eval-metasim \
        --lerobot runs/dp-eval-lerobot/drawer-close-v3 runs/dp-eval-lerobot/window-open-v3 \
        [--json OUT.json]
    python scripts/learned_policy_table.py --benchmark libero --metasim runs/ll/eval-native \
        --warp runs/ll/eval-warp --lerobot runs/ll/eval-lerobot/* --json OUT.json

`--metasim` (and `--warp`) is a run folder (its summary.json); `--lerobot` one or more
`--out` folders of `python -m metasim.reference.lerobot_eval` (their eval_info.json: one per
task when each task ran on its own; a task's episodes are summed over the folders). Tasks
are matched by name: Meta-World's env name (metasim's scene `metaworld_<env>`, LeRobot's
task group `<env>`), LIBERO's `<suite>_<index>` (metasim's scene name; LeRobot's task group
is the suite, its task id the index). Prints a markdown table; exits 1 when a task's
difference interval excludes 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from metasim.reference.lerobot_eval import INFO, per_task
from metasim.stats.intervals import success_interval
from metasim.stats.sensitivity import newcombe_interval

PREFIX = "metaworld_"
Counts = dict[str, tuple[int, int]]


def metasim_counts(run: Path) -> Counts:
    tasks = json.loads((run / "summary.json").read_text())["tasks"]
    return {t.removeprefix(PREFIX): (int(v["successes"]), int(v["n"])) for t, v in tasks.items()}


def lerobot_counts(folders: list[Path], benchmark: str = "metaworld") -> Counts:
    """Task -> (successes, episodes) summed over the eval_info.json of `folders` (LIBERO's
    tasks named `<suite>_<task id>`, as metasim names their scenes)."""
    infos = [json.loads((folder / INFO).read_text()) for folder in folders]
    entries = [dict(entry) for info in infos for entry in info.get("per_task", [])]
    if benchmark == "libero":
        for entry in entries:
            entry["task_group"] = f"{entry['task_group']}_{entry['task_id']}"
    return per_task({"per_task": entries})


def _rate(k: int, n: int) -> list[Any]:
    return [k, n, *success_interval(k, n)] if n else [k, n, 0.0, 1.0]


def paired_counts(native: Path, warp: Path) -> dict[str, dict[str, Any]]:
    """Task -> `metasim compare`'s entry of the two runs (A = native, B = warp), paired on
    (task, cell, episode, seed)."""
    from metasim.compare import compare_runs

    return dict(compare_runs([native, warp], reps=200)["tasks"])


def table(
    ours: Counts, theirs: Counts, paired: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    rows = []
    for task in sorted(set(ours) | set(theirs)):
        (k1, n1), (k2, n2) = ours.get(task, (0, 0)), theirs.get(task, (0, 0))
        lo, hi = newcombe_interval(k1, n1, k2, n2)
        row = {
            "task": task,
            "metasim": _rate(k1, n1),
            "lerobot": _rate(k2, n2),
            "difference": [k1 / max(n1, 1) - k2 / max(n2, 1), lo, hi],
            "within": bool(lo <= 0.0 <= hi) and n1 > 0 and n2 > 0,
        }
        if paired is not None:
            entry = paired.get(task)
            if entry is None:  # no warp episode of this task
                row["warp"], row["paired"], row["within"] = _rate(0, 0), None, False
            else:
                b = entry["b"]
                d = 0.0 - float(entry["diff"])  # compare's B - A; the table's metasim - warp
                dlo, dhi = (-float(x) for x in reversed(entry["diff_ci95"]))
                row["warp"] = _rate(int(b["successes"]), int(b["n"]))
                row["paired"] = [d, dlo, dhi, entry.get("mcnemar_p")]
                row["within"] = row["within"] and dlo <= 0.0 <= dhi
        rows.append(row)
    return rows


def _cell(r: list[Any]) -> str:
    k, n, lo, hi = r
    return f"{k}/{n} = {k / max(n, 1):.2f} [{lo:.2f}, {hi:.2f}]"


def markdown(rows: list[dict[str, Any]]) -> str:
    warp = any("warp" in r for r in rows)
    head = "| task | metasim eval |" + (" metasim warp |" if warp else "") + " lerobot-eval |"
    head += " metasim - warp, paired 95%, McNemar p |" if warp else ""
    head += " metasim - lerobot, Newcombe 95% | 0 inside |"
    out = [head, "|---" * head.count(" |") + "|"]
    for r in rows:
        cells = [r["task"], _cell(r["metasim"])]
        if warp:
            cells.append(_cell(r["warp"]))
        cells.append(_cell(r["lerobot"]))
        if warp:
            p = r["paired"]
            cells.append("-" if p is None else f"{p[0]:+.2f} [{p[1]:+.2f}, {p[2]:+.2f}], "
                         f"p = {p[3]:.2f}" if p[3] is not None else f"{p[0]:+.2f}")  # fmt: skip
        d, lo, hi = r["difference"]
        cells.append(f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}]")
        cells.append("yes" if r["within"] else "**no**")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--benchmark", choices=["metaworld", "libero"], default="metaworld")
    p.add_argument("--metasim", type=Path, required=True)
    p.add_argument("--warp", type=Path, help="the same episodes on backend=warp render=warp")
    p.add_argument("--lerobot", type=Path, required=True, nargs="+")
    p.add_argument("--json", type=Path)
    ns = p.parse_args(argv)
    paired = None if ns.warp is None else paired_counts(ns.metasim, ns.warp)
    rows = table(metasim_counts(ns.metasim), lerobot_counts(ns.lerobot, ns.benchmark), paired)
    print(markdown(rows))
    if ns.json:
        ns.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r["within"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
