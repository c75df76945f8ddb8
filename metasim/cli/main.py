"""The `metasim` command: thin verbs that parse arguments and call one library function."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from metasim.errors import MetasimInputError


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments in one paragraph with exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"error: {self.prog}: {message} (see '{self.prog} --help')\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="metasim", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)

    ev = verbs.add_parser("eval", help="evaluate a policy on a task suite (Hydra overrides)")
    ev.add_argument("overrides", nargs="*", help="e.g. suite=tabletop policy=scripted num_envs=8")
    ev.add_argument("--quiet", action="store_true", help="no progress bar or table")

    scene = verbs.add_parser("scene", help="validate, render or describe scene files")
    sv = scene.add_subparsers(dest="scene_verb", required=True, parser_class=_Parser)
    val = sv.add_parser("validate", help="check scene files; exit 2 on the first bad one")
    val.add_argument("files", nargs="+")
    ren = sv.add_parser("render", help="write a PNG per camera")
    ren.add_argument("file")
    ren.add_argument("--out", required=True)
    sv.add_parser("schema", help="print the JSON Schema of scene files")

    from metasim.bench import cli as bench_cli
    from metasim.cli import recon_cmd, serve_cmd

    bench_cli.add_parser(verbs, _Parser)
    serve_cmd.add_parser(verbs)
    recon_cmd.add_parser(verbs)

    cor = verbs.add_parser("correlate", help="sim-to-real correlation (or a pairwise ranking)")
    src = cor.add_mutually_exclusive_group(required=True)
    src.add_argument("--input", help="CSV: task,policy,sim_success,real_success[,sim_n,real_n]")
    src.add_argument("--sim", nargs="+", metavar="RUN_DIR", help="run folders of `metasim eval`")
    src.add_argument("--pairs", help="CSV: policy_a,policy_b,winner (or wins_a,wins_b[,ties])")
    cor.add_argument("--real", help="with --sim: CSV task,policy,real_success[,real_n]")
    cor.add_argument("--json", action="store_true", help="print JSON instead of a table")
    cor.add_argument("--plot", help="write a scatter plot PNG here")
    cor.add_argument("--html", help="write a self-contained HTML page (table + scatter) here")
    cor.add_argument("--reps", type=int, default=2000, help="bootstrap replicates")
    cor.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    cor.add_argument("--prior", type=float, default=0.0, help="--pairs: virtual ties per pair")

    rep = verbs.add_parser("report", help="write a self-contained report.html for a run folder")
    rep.add_argument("run_dir", help="a run folder of `metasim eval` (holds summary.json)")
    rep.add_argument("--compare", metavar="OTHER_RUN_DIR", help="a second run, side by side")
    rep.add_argument("--out", help="where to write the HTML (default RUN_DIR/report.html)")
    rep.add_argument("--videos", type=int, default=2, help="failures and successes to film")
    return parser


def run(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.verb == "scene":
        from metasim.cli import scene_cmds

        return scene_cmds.run(args)
    if args.verb == "eval":
        from metasim.evaluate.runner import run_eval_cli

        return run_eval_cli(list(args.overrides), quiet=args.quiet)
    if args.verb == "serve":
        from metasim.cli.serve_cmd import run_serve_cli

        return run_serve_cli(args)
    if args.verb == "recon":
        from metasim.cli.recon_cmd import run_recon_cli

        return run_recon_cli(args)
    if args.verb == "bench":
        from metasim.bench import cli as bench_cli

        return bench_cli.run(args)
    if args.verb == "correlate":
        from metasim.correlate.cli import run_correlate_cli

        return run_correlate_cli(args)
    if args.verb == "report":
        from metasim.report.build import run_report_cli

        return run_report_cli(args.run_dir, args.compare, args.out, args.videos)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = run(sys.argv[1:] if argv is None else argv)
    except MetasimInputError as exc:
        sys.stderr.write(exc.render() + "\n")
        code = exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        code = 130
    if argv is None:
        raise SystemExit(code)
    return code
