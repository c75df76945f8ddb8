"""`metasim robosuite modeldiff [--tasks Lift,Stack] [--json]`: metasim's compiled
robosuite tasks against robosuite's own MjModel (checks/modeldiff.py); exit 1 on an
unlisted difference. Also `metasim check modeldiff --benchmark robosuite`."""

from __future__ import annotations

import argparse
import json
from typing import Any

from metasim.cli.verbs import verb
from metasim.errors import MetasimInputError
from metasim.robosuite.tasks import TASKS


def add_parser(verbs: Any) -> None:
    rs = verbs.add_parser("robosuite", help="robosuite tools (checks against robosuite 1.4.0)")
    sub = rs.add_subparsers(dest="robosuite_verb", required=True, parser_class=type(rs))
    md = sub.add_parser("modeldiff", help="every model field against robosuite's own MjModel")
    md.add_argument("--tasks", default=",".join(TASKS), help="comma-separated task names")
    md.add_argument("--json", action="store_true", help="print the diff as JSON")


def run(args: argparse.Namespace) -> int:
    from metasim.robosuite.checks.modeldiff import diff_task
    from metasim.robosuite.reference.simulator import RobosuiteRef

    tasks = [t for t in args.tasks.split(",") if t]
    unknown = [t for t in tasks if t not in TASKS]
    if unknown or not tasks:
        raise MetasimInputError("--tasks", [f"unknown {unknown}; known: {', '.join(TASKS)}"])
    with RobosuiteRef() as ref:
        rows = [diff_task(ref, t) for t in tasks]
    if args.json:
        print(json.dumps(rows, indent=1))
    for r in rows if not args.json else ():
        print(f"{r['task']}: {r['fields']} fields, {r['values']} values; {r['differences']} "
              f"differences, {len(r['unlisted'])} unlisted")  # fmt: skip
        for u in r["unlisted"]:
            print(f"  UNLISTED {u['field']} {u['element']}: {u['metasim']} vs {u['reference']}")
    return 1 if any(r["unlisted"] for r in rows) else 0


verb("robosuite", add_parser, run)
