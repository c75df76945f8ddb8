"""`metasim collect [OVERRIDES...]`: record a policy's episodes as a LeRobot dataset."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from metasim.cli.verbs import verb


def add_parser(verbs: Any) -> None:
    co = verbs.add_parser(
        "collect", help="record episodes as a LeRobot dataset (eval's overrides + its own)"
    )
    co.add_argument(
        "overrides",
        nargs="*",
        help="e.g. suite=tabletop episodes=20 perturbation=visual out=DIR; own options: "
        "keep=success|all image_size=96 cameras=[front,wrist] repo_id=NAME",
    )
    co.add_argument("--quiet", action="store_true", help="no progress bar or table")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import TextColumn, TimeRemainingColumn
    from rich.table import Table

    from metasim.cli.progress import task_progress
    from metasim.collect.options import compose_collect
    from metasim.collect.runner import collect

    cfg, opts = compose_collect(list(args.overrides))  # validated: nothing written yet
    if args.quiet:
        result = collect(cfg, opts)
    else:
        extra = (TimeRemainingColumn(), TextColumn("{task.fields[kept]}"))
        with task_progress(*extra) as progress:
            bars: dict[str, Any] = {}

            def start(held: dict[str, int], total: int) -> None:
                for task, n in held.items():
                    bars[task] = progress.add_task(task, total=total, completed=n, kept="")

            def advance(task: str, n: int, kept: int) -> None:
                progress.update(bars[task], advance=n, kept=f"dataset: {kept} episodes")

            result = collect(cfg, opts, start, advance)
    table = Table(title=f"collect {cfg.suite.name} / {cfg.policy.kind} (seed {cfg.seed})")
    for col in ("task", "episodes run", "successes", "in dataset"):
        table.add_column(col, justify="left" if col == "task" else "right")
    for task, row in result.per_task.items():
        table.add_row(task, str(row["run"]), str(row["successes"]), str(row["kept"]))
    Console().print(table)
    kept = sum(row["kept"] for row in result.per_task.values())
    if kept == 0:  # LeRobot has no dataset to open there: say so, do not exit 0
        run = sum(row["run"] for row in result.per_task.values())
        sys.stderr.write(
            f"error: out={result.root}: no episode is in the dataset ({run} run, none kept "
            f"with keep={opts.keep}), so the folder holds no LeRobot dataset yet "
            "(LeRobotDataset cannot open it). Fix the policy or the tasks, or use keep=all "
            "to keep failed episodes too; the episodes run are recorded in "
            "meta/metasim_episodes.jsonl and are not run again\n"
        )
        return 1
    Console().print(f"dataset: {result.root}")
    return 0


verb("collect", add_parser, run)
