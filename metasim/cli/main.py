"""The `metasim` command: thin verbs that parse arguments and call one library function."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from metasim.cli.check_cmd import check_verbs
from metasim.cli.verbs import VERBS, Parser  # the verbs: built-in ones and plug-ins'
from metasim.errors import MetasimInputError


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="metasim", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=Parser)
    hidden = set(check_verbs())  # a plug-in's check verbs: `metasim check` runs them
    for name, verb in VERBS.items():
        if name not in hidden:
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
