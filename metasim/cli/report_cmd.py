"""`metasim report RUN_DIR [--compare OTHER] [--out FILE] [--videos N]`."""

from __future__ import annotations

import argparse
from typing import Any

from metasim.cli.verbs import verb
from metasim.errors import MetasimInputError
from metasim.guards import bounded_int


def add_parser(verbs: Any) -> None:
    rep = verbs.add_parser("report", help="write a self-contained report.html for a run folder")
    rep.add_argument("run_dir", help="a run folder of `metasim eval` (holds summary.json)")
    rep.add_argument("--compare", metavar="OTHER_RUN_DIR", help="a second run, side by side")
    rep.add_argument("--out", help="where to write the HTML (default RUN_DIR/report.html)")
    rep.add_argument(
        "--videos", type=bounded_int(0, 100), default=2, help="failures and successes to film"
    )


def run(args: argparse.Namespace) -> int:
    """Write the report, print its path."""
    from metasim.report.build import build_report

    if args.videos < 0:
        raise MetasimInputError("--videos", [f"must be >= 0, got {args.videos}"])
    path = build_report(args.run_dir, args.compare, args.out, args.videos)
    print(f"report: {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


verb("report", add_parser, run)
