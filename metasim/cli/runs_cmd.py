"""`metasim runs [ROOT] [--sql QUERY] [--json]`: list run folders, or query them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from metasim.cli.verbs import verb


def add_parser(verbs: Any) -> None:
    runs = verbs.add_parser(
        "runs", help="list every run folder under a root, or query them all with SQL"
    )
    runs.add_argument("root", nargs="?", default="runs", help="a folder of run folders (runs/)")
    runs.add_argument(
        "--sql",
        metavar="QUERY",
        help="DuckDB SQL over the views runs and episodes; the result as CSV on stdout",
    )
    runs.add_argument("--json", action="store_true", help="print the listing as JSON rows")


def _short(value: Any, n: int = 10) -> str:
    return "—" if value is None else str(value)[:n]


def _checkpoint(row: dict[str, Any]) -> str:
    if row["checkpoint_path"] is None:
        return "—"
    return f"{row['checkpoint_path']} ({_short(row['checkpoint_sha256'], 12)})"


def _done(row: dict[str, Any]) -> str:
    done, planned = row["episodes_done"], row["episodes_planned"]
    return f"{'—' if done is None else done}/{'?' if planned is None else planned}"


def _success(row: dict[str, Any]) -> str:
    rate = row["success_rate"]
    return "—" if rate is None else f"{rate:.2f}"


def print_listing(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(rows)} run folder(s)")
    cols = ["run", "suite", "policy", "checkpoint", "backend", "renderer", "grid", "seed"]
    for col in [*cols, "versions", "commit", "done/planned", "success", "status"]:
        table.add_column(col, justify="right" if col in ("seed", "success") else "left")
    for r in rows:
        table.add_row(
            r["run"],
            _short(r["suite"], 40),
            _short(r["policy_name"], 40),
            _checkpoint(r),
            _short(r["backend"], 20),
            _short(r["renderer"], 40),
            _short(r["perturbation"], 40),
            _short(r["seed"], 12),
            f"metasim {_short(r['metasim_version'])} · mujoco {_short(r['mujoco_version'])}",
            _short(r["git_commit"]),
            _done(r),
            _success(r),
            r["status"],
        )
    console = Console()
    if not console.is_terminal:
        console.width = max(console.width, 200)
    console.print(table)


def run(args: argparse.Namespace) -> int:
    """The `metasim runs` verb: see `metasim runs --help`."""
    from metasim.index import describe, find_runs, run_sql

    if args.sql is not None:
        if args.json:
            from metasim.errors import MetasimInputError

            raise MetasimInputError("metasim runs", ["--sql writes CSV; it does not take --json"])
        run_sql(args.root, args.sql, sys.stdout, lambda t: sys.stderr.write(f"warning: {t}\n"))
        return 0
    rows = [describe(e) for e in find_runs(args.root)]
    for r in rows:
        if r["status"].startswith("damaged"):
            sys.stderr.write(f"warning: {r['path']}: {r['status']}\n")
    if args.json:
        for r in rows:
            r["manifest"] = json.loads(r["manifest"])
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    else:
        print_listing(rows)
    return 0


verb("runs", add_parser, run)
