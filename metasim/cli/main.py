"""The `metasim` command: thin verbs that parse arguments and call one library function."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from metasim.cli.verbs import VERBS  # the verbs: built-in ones and plug-ins'
from metasim.errors import MetasimInputError


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments in one paragraph with exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"error: {self.prog}: {message} (see '{self.prog} --help')\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="metasim", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)
    for _, verb in VERBS.items():
        verb.add(verbs)
    return parser


routing = [False]  # True while `metasim check` runs a plug-in's verb


def note_old_spelling(argv: list[str]) -> None:
    """One stderr line when `argv` is a plug-in's own spelling of a benchmark check
    (`metasim check CHECK --benchmark NAME` is the one spelling; the old ones still run)."""
    from metasim.reference.benchmark import BENCHMARKS

    if routing[0]:
        return
    for name, entry in BENCHMARKS.items():
        for check, prefix in entry.checks.items():
            if tuple(argv[: len(prefix)]) == prefix:
                old, new = " ".join(prefix), f"check {check} --benchmark {name}"
                sys.stderr.write(f"note: `metasim {old}` is now `metasim {new}`\n")
                return


def run(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    code = VERBS[args.verb].run(args)
    if code == 0 and args.verb != "check":  # after a refusal its one paragraph stays alone
        note_old_spelling(list(argv))
    return code


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
