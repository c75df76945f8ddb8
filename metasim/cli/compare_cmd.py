"""`metasim compare RUN_A RUN_B [RUN_C ...]`: paired differences between runs."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from metasim.cli.verbs import verb
from metasim.guards import PNG, SEED, bounded_int, check_out_file, out_file
from metasim.report.html import HTML_PAGE

MAX_REPS = 100_000
SHOW_DISCORDANT = 10  # discordant episodes printed per comparison (all are in --json)


def add_parser(verbs: Any) -> None:
    from metasim.policies.base import add_allow_code

    cmp = verbs.add_parser(
        "compare", help="is run B better than run A? paired per-task and pooled differences"
    )
    cmp.add_argument("runs", nargs="+", metavar="RUN_DIR", help="two or more run folders")
    cmp.add_argument("--json", action="store_true", help="print JSON instead of tables")
    cmp.add_argument(
        "--unpaired",
        action="store_true",
        help="accept runs of different seeds, compared as independent samples",
    )
    cmp.add_argument(
        "--plan",
        action="store_true",
        help="say how many episodes per task and cell would settle the pooled difference",
    )
    cmp.add_argument("--plot", type=out_file(PNG), help="write the performance-profile PNG here")
    cmp.add_argument(
        "--html", type=out_file(HTML_PAGE), help="write an HTML page of the comparison here"
    )
    cmp.add_argument(
        "--videos", type=bounded_int(0, 20), default=0, help="--html: discordant episodes to film"
    )
    add_allow_code(cmp, "--videos: replay a run's policy")
    cmp.add_argument(
        "--reps", type=bounded_int(1, MAX_REPS), default=2000, help="bootstrap replicates"
    )
    cmp.add_argument("--seed", type=SEED, default=0, help="bootstrap seed")


def run(args: argparse.Namespace) -> int:
    """The `metasim compare` verb: see `metasim compare --help`."""
    from metasim.compare import compare_loaded
    from metasim.errors import MetasimInputError
    from metasim.report.data import load_run

    if len(args.runs) < 2:
        raise MetasimInputError("metasim compare", ["needs at least two run folders"])
    for flag, out, kind in (("--plot", args.plot, PNG), ("--html", args.html, HTML_PAGE)):
        if out is not None:
            check_out_file(out, flag, kind)  # found before the runs are read
    runs = [load_run(p) for p in args.runs]
    result = compare_loaded(runs, args.unpaired, args.reps, args.seed, args.plan)
    if args.plot:
        from metasim.compare.figures import profile_png

        result["plot"] = str(profile_png(runs, result_tasks(result), args.plot, args.seed))
    if args.html:
        from metasim.compare.html import write_page

        warn = result["warnings"].append  # printed below, and kept in --json
        page = write_page(runs, result, args.html, args.videos, args.allow_code, warn)
        result["html"] = str(page)
    for note in result["warnings"]:
        sys.stderr.write(f"warning: {note}\n")
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    else:
        print_result(result)
    return 0


def result_tasks(result: dict[str, Any]) -> list[str]:
    return list(result["tasks"])


def _rate(r: dict[str, Any]) -> str:
    lo, hi = r["ci95"]
    return f"{r['rate']:.2f} [{lo:.2f}, {hi:.2f}] ({r['successes']}/{r['n']})"


def _diff(e: dict[str, Any]) -> str:
    lo, hi = e["diff_ci95"]
    return f"{e['diff']:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def _row(name: str, e: dict[str, Any]) -> list[str]:
    p = "—" if e["mcnemar_p"] is None else f"{e['mcnemar_p']:.3g}"
    disc = e.get("discordant")
    split = f"{disc['a_only']} / {disc['b_only']}" if disc else "—"
    return [name, _rate(e["a"]), _rate(e["b"]), _diff(e), p, split]


def _interval(v: dict[str, Any]) -> str:
    lo, hi = v["ci95"]
    return f"{v['value']:.3f} [{lo:.3f}, {hi:.3f}]"


def print_comparison(c: dict[str, Any]) -> None:
    """One comparison: per-task table, pooled row, aggregates, discordant episodes."""
    from rich.console import Console
    from rich.table import Table

    a, b = c["runs"]["a"], c["runs"]["b"]
    kind = "paired" if c["paired"] else "UNPAIRED"
    table = Table(title=f"B: {b['label']}  vs  A: {a['label']} ({kind}, 95% CI)")
    for col in ("task", "A success", "B success", "B − A", "McNemar p", "only A / only B"):
        table.add_column(col, justify="left" if col == "task" else "right")
    for task, e in c["tasks"].items():
        table.add_row(*_row(task, e))
    table.add_section()
    table.add_row(*_row("pooled", c["pooled"]))
    console = Console()
    if not console.is_terminal:
        console.width = max(console.width, 130)  # piped: keep each interval on one line
    console.print(table)
    agg = c["aggregate"]
    for name in ("iqm", "optimality_gap"):
        console.print(
            f"{name}: A {_interval(agg['a'][name])}, B {_interval(agg['b'][name])}", highlight=False
        )
    console.print(f"IQM B − A: {_interval(agg['iqm_diff'])}", highlight=False)
    console.print(
        f"P(B > A) over tasks: {_interval(agg['probability_of_improvement'])}", highlight=False
    )
    console.print(f"Method: {c['method']}. Aggregates: {agg['method']}.", highlight=False)
    disc = c["discordant"]
    if disc:
        shown = ", ".join(
            f"{d['task']}/{d['cell']}/ep{d['episode']} ({'A' if d['a'] else 'B'} succeeded)"
            for d in disc[:SHOW_DISCORDANT]
        )
        more = (
            f" and {len(disc) - SHOW_DISCORDANT} more (--json)"
            if len(disc) > SHOW_DISCORDANT
            else ""
        )
        console.print(f"Discordant episodes ({len(disc)}): {shown}{more}", highlight=False)


def plan_text(p: dict[str, Any]) -> str:
    now = p["episodes_per_cell_now"]
    if p["episodes_per_cell"] is None:
        return f"Plan: cannot settle it: {p['why']}."
    if p["already_settled"]:
        return f"Plan: the pooled interval already excludes 0 at {now} episodes per task and cell."
    return (
        f"Plan: {p['episodes_per_cell']} episodes per task and cell (now {now}) would make the "
        f"pooled interval exclude 0 at the observed effect ({p['assumes']}). Resume both: "
        + "; ".join(p["commands"])
    )


def print_result(result: dict[str, Any]) -> None:
    for c in result.get("comparisons", [result]):
        print_comparison(c)
        if "plan" in c:
            print(plan_text(c["plan"]))
    for key in ("plot", "html"):
        if key in result:
            print(f"{key}: {result[key]}")


verb("compare", add_parser, run)
