"""The `metasim` command: thin verbs that parse arguments and call one library function."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from metasim.cli import (
    bench_cmd,
    collect_cmd,
    correlate_cmd,
    eval_cmd,
    libero_cmd,
    recon_cmd,
    report_cmd,
    scene_cmds,
    schema_cmd,
    serve_cmd,
)
from metasim.errors import MetasimInputError


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments in one paragraph with exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"error: {self.prog}: {message} (see '{self.prog} --help')\n")
        raise SystemExit(2)


@dataclass(frozen=True)
class Verb:
    """A verb: `add(subparsers)` declares its arguments, `run(args)` calls the library."""

    add: Callable[[Any], None]
    run: Callable[[argparse.Namespace], int]


VERBS: dict[str, Verb] = {
    "eval": Verb(eval_cmd.add_parser, eval_cmd.run),
    "collect": Verb(collect_cmd.add_parser, collect_cmd.run),
    "scene": Verb(scene_cmds.add_parser, scene_cmds.run),
    "bench": Verb(bench_cmd.add_parser, bench_cmd.run),
    "serve": Verb(serve_cmd.add_parser, serve_cmd.run_serve_cli),
    "recon": Verb(recon_cmd.add_parser, recon_cmd.run_recon_cli),
    "correlate": Verb(correlate_cmd.add_parser, correlate_cmd.run),
    "report": Verb(report_cmd.add_parser, report_cmd.run),
    "schema": Verb(schema_cmd.add_parser, schema_cmd.run),
    "libero": Verb(libero_cmd.add_parser, libero_cmd.run),
}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="metasim", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)
    for verb in VERBS.values():
        verb.add(verbs)
    return parser


def run(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    return VERBS[args.verb].run(args)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = run(sys.argv[1:] if argv is None else argv)
    except MetasimInputError as exc:
        sys.stderr.write(exc.render() + "\n")
        code = exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        code = 130
    except SystemExit as exc:  # argparse's usage errors (exit 2) and --help (exit 0)
        if argv is None:
            raise
        code = exc.code if isinstance(exc.code, int) else 1
    if argv is None:
        raise SystemExit(code)
    return code
