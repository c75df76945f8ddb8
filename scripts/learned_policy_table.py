"""One checkpoint, two harnesses: per-task success of `metasim eval` and of LeRobot's own
`lerobot-eval`, each with its Wilson 95% interval, and Newcombe's 95% interval on the
difference (the two sides draw their episodes independently: unpaired).

    python scripts/learned_policy_table.py --metasim runs/dp-eval-metasim \
        --lerobot runs/dp-eval-lerobot/drawer-close-v3 runs/dp-eval-lerobot/window-open-v3 \
        [--json OUT.json]

`--metasim` is a run folder (its summary.json); `--lerobot` one or more `--out` folders of
`python -m metasim.reference.lerobot_eval` (their eval_info.json: one per task when each
task ran on its own; a task's episodes are summed over the folders). Tasks are matched by the
Meta-World env name (metasim's scene `metaworld_<env>`, LeRobot's task group `<env>`).
Prints a markdown table; exits 1 when a task's difference interval excludes 0.
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


def metasim_counts(run: Path) -> dict[str, tuple[int, int]]:
    tasks = json.loads((run / "summary.json").read_text())["tasks"]
    return {t.removeprefix(PREFIX): (int(v["successes"]), int(v["n"])) for t, v in tasks.items()}


def lerobot_counts(folders: list[Path]) -> dict[str, tuple[int, int]]:
    """Task -> (successes, episodes) summed over the eval_info.json of `folders`."""
    infos = [json.loads((folder / INFO).read_text()) for folder in folders]
    return per_task({"per_task": [entry for info in infos for entry in info.get("per_task", [])]})


def table(
    ours: dict[str, tuple[int, int]], theirs: dict[str, tuple[int, int]]
) -> list[dict[str, Any]]:
    rows = []
    for task in sorted(set(ours) | set(theirs)):
        (k1, n1), (k2, n2) = ours.get(task, (0, 0)), theirs.get(task, (0, 0))
        lo, hi = newcombe_interval(k1, n1, k2, n2)
        rows.append(
            {
                "task": task,
                "metasim": [k1, n1, *success_interval(k1, n1)] if n1 else [k1, n1, 0.0, 1.0],
                "lerobot": [k2, n2, *success_interval(k2, n2)] if n2 else [k2, n2, 0.0, 1.0],
                "difference": [k1 / max(n1, 1) - k2 / max(n2, 1), lo, hi],
                "within": bool(lo <= 0.0 <= hi) and n1 > 0 and n2 > 0,
            }
        )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    out = [
        "| task | metasim eval | lerobot-eval | difference, Newcombe 95% | 0 inside |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        cells = []
        for side in ("metasim", "lerobot"):
            k, n, lo, hi = r[side]
            cells.append(f"{k}/{n} = {k / max(n, 1):.2f} [{lo:.2f}, {hi:.2f}]")
        d, lo, hi = r["difference"]
        mark = "yes" if r["within"] else "**no**"
        out.append(
            f"| {r['task']} | {cells[0]} | {cells[1]} | {d:+.2f} [{lo:+.2f}, {hi:+.2f}] | {mark} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--metasim", type=Path, required=True)
    p.add_argument("--lerobot", type=Path, required=True, nargs="+")
    p.add_argument("--json", type=Path)
    ns = p.parse_args(argv)
    rows = table(metasim_counts(ns.metasim), lerobot_counts(ns.lerobot))
    print(markdown(rows))
    if ns.json:
        ns.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(r["within"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
