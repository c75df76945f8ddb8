"""`metasim correlate`: load a study (or pairwise outcomes), analyze, print a table or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from metasim.cli.verbs import verb
from metasim.errors import MetasimInputError
from metasim.guards import (
    PNG,
    SEED,
    bounded_float,
    bounded_int,
    check_budget,
    check_out_file,
    out_file,
)
from metasim.report.html import HTML_PAGE

if TYPE_CHECKING:
    from metasim.correlate.study import Study

LABELS = {"pearson": "Pearson r", "spearman": "Spearman ρ", "kendall": "Kendall τ", "mmrv": "MMRV"}
SOURCE = "metasim correlate"
MAX_REPS = 100_000  # bootstrap replicates; memory is bounded by MAX_CELLS below too


def add_parser(verbs: Any) -> None:
    cor = verbs.add_parser("correlate", help="sim-to-real correlation (or a pairwise ranking)")
    src = cor.add_mutually_exclusive_group(required=True)
    src.add_argument("--input", help="CSV: task,policy,sim_success,real_success[,sim_n,real_n]")
    src.add_argument("--sim", nargs="+", metavar="RUN_DIR", help="run folders of `metasim eval`")
    src.add_argument("--pairs", help="CSV: policy_a,policy_b,winner (or wins_a,wins_b[,ties])")
    cor.add_argument("--real", help="with --sim: CSV task,policy,real_success[,real_n]")
    cor.add_argument("--json", action="store_true", help="print JSON instead of a table")
    cor.add_argument("--plot", type=out_file(PNG), help="write a scatter plot PNG here")
    cor.add_argument(
        "--html",
        type=out_file(HTML_PAGE),
        help="write a self-contained HTML page (table + scatter) here",
    )
    cor.add_argument(
        "--reps", type=bounded_int(1, MAX_REPS), default=2000, help="bootstrap replicates"
    )
    cor.add_argument("--seed", type=SEED, default=0, help="bootstrap seed")
    cor.add_argument(
        "--prior", type=bounded_float(0, 1e6), default=0.0, help="--pairs: virtual ties per pair"
    )


def _fmt(value: float | None, ci: list[float] | None) -> str:
    if value is None:
        return "—"
    text = f"{value:+.2f}" if value < 0 else f"{value:.2f}"
    return text + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def _row(name: str, n: str, result: dict[str, Any]) -> list[str]:
    from metasim.correlate.metrics import METRICS

    ci = result.get("ci95") or {}
    return [name, n, *(_fmt(result.get(m), ci.get(m)) for m in METRICS)]


def print_table(result: dict[str, Any]) -> None:
    """A human-readable table of every task, the pooled points and the mean over tasks."""
    from rich.console import Console
    from rich.table import Table

    from metasim.correlate.metrics import METRICS

    table = Table(title="Sim-to-real agreement (95% CI)")
    for col in ("task", "N", *(LABELS[m] for m in METRICS)):
        table.add_column(col, justify="left" if col == "task" else "right")
    for task, row in result["tasks"].items():
        table.add_row(*_row(task, str(row["n_policies"]), row))
    pooled = result["pooled"]
    if pooled.get("n_points"):
        table.add_section()
        table.add_row(*_row("pooled (all points)", str(pooled["n_points"]), pooled))
        table.add_row(*_row("mean over tasks", str(pooled["n_tasks"]), pooled["mean_over_tasks"]))
    console = Console()
    if not console.is_terminal:
        console.width = max(console.width, 120)  # Piped output: keep each interval on one line.
    console.print(table)
    method = result["method"]
    known = method["episode_counts_known"]
    console.print(
        f"Intervals: {method['interval']}, {method['reps']} replicates (seed {method['seed']}): "
        f"{method['resampling']}. Episode counts known: sim {known['sim']}, "
        f"real {known['real']}. MMRV: lower is better."
    )
    if "plot" in result:
        console.print(f"scatter plot: {result['plot']}")


def print_ranking(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Bradley–Terry ranking ({result['n_comparisons']:g} comparisons)")
    for col in ("rank", "policy", "θ", "s.e.", "95% CI"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for row in result["ranking"]:
        lo, hi = row["ci95"]
        table.add_row(
            str(row["rank"]),
            row["policy"],
            f"{row['theta']:+.2f}",
            f"{row['se']:.2f}",
            f"[{lo:+.2f}, {hi:+.2f}]",
        )
    Console().print(table)
    Console().print(f"{result['method']['fit']}; {result['method']['interval']}.")


def _study(args: argparse.Namespace) -> Study:
    from metasim.correlate.runs import load_study_runs
    from metasim.correlate.study import load_study_csv

    if args.sim:
        if not args.real:
            raise MetasimInputError(SOURCE, ["--sim needs --real real.csv (real success rates)"])
        return load_study_runs(args.sim, args.real)
    if args.real:
        raise MetasimInputError(SOURCE, ["--real goes with --sim RUN_DIR..., not with --input"])
    return load_study_csv(args.input)


def _pairs(args: argparse.Namespace) -> int:
    from metasim.correlate.bradley_terry import fit_bradley_terry, load_pairwise_csv

    if args.plot:
        raise MetasimInputError(
            SOURCE, ["--plot draws a sim/real study; it does not apply to --pairs"]
        )
    data = load_pairwise_csv(args.pairs)
    try:
        fit = fit_bradley_terry(data, prior=args.prior)
    except ValueError as exc:
        raise MetasimInputError(
            args.pairs, [str(exc)], "--prior K adds K virtual ties between every pair"
        ) from None
    result = fit.to_dict()
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    else:
        print_ranking(result)
    return 0


def run(args: argparse.Namespace) -> int:
    """The `metasim correlate` verb: see `metasim correlate --help`."""
    from metasim.correlate.analysis import BootstrapSpec, analyze
    from metasim.correlate.plot import scatter_plot

    if args.pairs:
        return _pairs(args)
    for flag, out, kind in (("--plot", args.plot, PNG), ("--html", args.html, HTML_PAGE)):
        if out is not None:
            check_out_file(out, flag, kind)  # makes its folder: found before the analysis runs
    study = _study(args)
    # Replicates of every row are kept for the pooled interval: about 32 bytes per cell.
    check_budget("--reps × rows", args.reps * len(study.entries), "METASIM_CORRELATE_MAX_CELLS")
    result = analyze(study, BootstrapSpec(reps=args.reps, seed=args.seed))
    if args.plot:
        pearson = {task: row["pearson"] for task, row in result["tasks"].items()}
        result["plot"] = str(scatter_plot(study, args.plot, pearson))
    if args.html:
        from metasim.correlate.html_report import write_html

        result["html"] = str(write_html(study, result, args.html))
    for note in result["warnings"]:
        sys.stderr.write(f"warning: {note}\n")
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    else:
        print_table(result)
    return 0


verb("correlate", add_parser, run)
