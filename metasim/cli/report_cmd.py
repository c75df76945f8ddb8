"""`metasim report RUN_DIR [--compare OTHER] [--out FILE] [--videos N]`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from metasim.cli.verbs import verb
from metasim.errors import MetasimInputError
from metasim.guards import bounded_int


def add_parser(verbs: Any) -> None:
    from metasim.policies.base import add_allow_code

    rep = verbs.add_parser("report", help="write a self-contained report.html for a run folder")
    rep.add_argument("run_dir", help="a run folder of `metasim eval` (holds summary.json)")
    rep.add_argument("--compare", metavar="OTHER_RUN_DIR", help="a second run, side by side")
    rep.add_argument("--out", help="where to write the HTML (default RUN_DIR/report.html)")
    rep.add_argument(
        "--videos", type=bounded_int(0, 100), default=2, help="failures and successes to film"
    )
    add_allow_code(rep, "replay the run's policy")


def run(args: argparse.Namespace) -> int:
    """Write the report, print its path."""
    from metasim.report.build import build_report

    if args.videos < 0:
        raise MetasimInputError("--videos", [f"must be >= 0, got {args.videos}"])

    def warn(text: str) -> None:
        sys.stderr.write(f"warning: {text}\n")

    path = build_report(args.run_dir, args.compare, args.out, args.videos, args.allow_code, warn)
    print(f"report: {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


verb("report", add_parser, run)
