"""`metasim eval [OVERRIDES...]`: compose the config, run it, print the per-task table."""

from __future__ import annotations

import argparse
from typing import Any

from metasim.cli.verbs import verb
from metasim.errors import MetasimInputError


def add_parser(verbs: Any) -> None:
    from metasim.policies.base import add_allow_code

    ev = verbs.add_parser("eval", help="evaluate a policy on a task suite (Hydra overrides)")
    ev.add_argument("overrides", nargs="*", help="e.g. suite=tabletop policy=scripted num_envs=8")
    ev.add_argument("--quiet", action="store_true", help="no progress bar or table")
    ev.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="resume (or extend, with episodes=N) the run in RUN_DIR from its manifest",
    )
    add_allow_code(ev, "--resume: build the manifest's policy")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from metasim.cli.progress import task_progress
    from metasim.evaluate.config import compose
    from metasim.evaluate.runner import run_eval

    if args.resume:
        from metasim.evaluate.resume_run import resume_config

        cfg = resume_config(args.resume, list(args.overrides), args.allow_code)
    else:
        if args.allow_code:
            raise MetasimInputError("--allow-code", ["only --resume RUN_DIR takes it"])
        cfg = compose(list(args.overrides))  # validated, rollout spec built: nothing written
    if args.quiet:
        result = run_eval(cfg, extend=bool(args.resume))
    else:
        with task_progress() as progress:
            result = run_eval(cfg, progress, extend=bool(args.resume))
    table = Table(title=f"{cfg.suite.name} / {cfg.policy.kind} (seed {cfg.seed})")
    for col in ("task", "success", "95% CI", "n", "progress", "steps"):
        table.add_column(col, justify="left" if col == "task" else "right")
    for task, row in result.summary.tasks.items():
        lo, hi = row.interval
        table.add_row(
            task,
            f"{row.success_rate:.2f}",
            f"[{lo:.2f}, {hi:.2f}]",
            str(row.n),
            f"{row.mean_progress or 0.0:.2f}",
            f"{row.mean_steps or 0.0:.0f}",
        )
    Console().print(table)
    Console().print(f"run folder: {result.run_dir}")
    return 0


verb("eval", add_parser, run)
