"""`metasim check CHECK --benchmark NAME [OPTIONS...]`: a benchmark's reference check.

The checks against a benchmark's reference simulator have one spelling whatever the
benchmark: `parity` (the same actions from the same state in both simulators), `modeldiff`
(every compiled model field against the reference's), `xcheck` (a policy's episodes
replayed or rerun in the reference: paired success). Each registered benchmark
(`metasim.reference.benchmark`) names the verb of its plug-in that runs each check; the
options after CHECK are that verb's (`metasim check CHECK --benchmark NAME --help`). The
plug-ins' verbs are reached only through `metasim check` (their own spellings, such as
`metasim libero xcheck` or `metasim metaworld-compare`, were removed: docs/release_notes.md).
"""

from __future__ import annotations

import argparse
from typing import Any

from metasim.cli.verbs import VERBS, Parser, verb
from metasim.errors import MetasimInputError
from metasim.reference.benchmark import BENCHMARKS, CHECKS, check_argv


def add_parser(verbs: Any) -> None:
    p = verbs.add_parser(
        "check",
        help="a benchmark's reference check: parity, modeldiff or xcheck",
        description=__doc__.split("\n\n")[1],
    )
    p.add_argument("--benchmark", help="a registered benchmark (libero, metaworld, ...)")
    p.add_argument("check", choices=CHECKS)
    p.add_argument("rest", nargs=argparse.REMAINDER, help="the check's own options")


def check_verbs() -> list[str]:
    """The plug-in verbs that run benchmarks' checks (reached through `metasim check` only)."""
    names = {argv[0] for _, entry in BENCHMARKS.items() for argv in entry.checks.values()}
    return sorted(names)


def check_parser() -> argparse.ArgumentParser:
    """The parser of every plug-in check verb, as `metasim check` runs them: each check's
    own parser is named `metasim check CHECK --benchmark NAME` in its usage and errors."""
    parser = Parser(prog="metasim check", add_help=False)
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=Parser)
    for name in check_verbs():
        VERBS[name].add(verbs)
    for name, entry in BENCHMARKS.items():
        for check, argv in entry.checks.items():
            _sub(parser, argv).prog = f"metasim check {check} --benchmark {name}"
    return parser


def _sub(parser: argparse.ArgumentParser, argv: tuple[str, ...]) -> argparse.ArgumentParser:
    """The sub-parser that `argv` (verb, sub-verb, ...) names under `parser`."""
    for word in argv:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


def _benchmark_of(args: argparse.Namespace) -> tuple[str, list[str]]:
    """--benchmark from before CHECK or from among the options after it."""
    rest, name = list(args.rest), args.benchmark
    if name:  # given before CHECK: the options after it are the check's own (a check may
        return name, rest  # have a --benchmark of its own: Meta-World's MT10/MT50)
    for i, arg in enumerate(rest):
        if arg == "--benchmark" and i + 1 < len(rest):
            name = rest[i + 1]
            del rest[i : i + 2]
            break
        if arg.startswith("--benchmark="):
            name = arg.split("=", 1)[1]
            del rest[i]
            break
    if not name:
        known = ", ".join(BENCHMARKS.names()) or "none installed"
        raise MetasimInputError("metasim check", [f"--benchmark NAME is required ({known})"])
    return name, rest


def run(args: argparse.Namespace) -> int:
    name, rest = _benchmark_of(args)
    argv = [*check_argv(name, args.check), *rest]
    parsed = check_parser().parse_args(argv)
    return VERBS[parsed.verb].run(parsed)


verb("check", add_parser, run)
