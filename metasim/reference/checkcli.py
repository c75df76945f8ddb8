"""What every benchmark's reference-check verbs (parity, modeldiff, xcheck) share on the
command line: the output flags, the summary printed as JSON or as the check's table, and
the one line (exit status 1) that says the reference failed. A benchmark's CLI adds only
the arguments that name its tasks and the check's own knobs."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from metasim.errors import one_line
from metasim.guards import OUT_DIR
from metasim.reference.spec import ReferenceSpec


def add_checks(verbs: Any, benchmark: str, help: str) -> Any:
    """The verb `metasim <benchmark>` on the `metasim` parser's `verbs`; returns its
    sub-parsers (the chosen one in `args.<benchmark>_verb`), for `add_check`."""
    parser = verbs.add_parser(benchmark, help=help)
    dest = f"{benchmark}_verb"
    return parser.add_subparsers(dest=dest, required=True, parser_class=type(parser))


def add_check(sub: Any, check: str, help: str) -> argparse.ArgumentParser:
    """The sub-verb `check` (parity, modeldiff, xcheck) of a benchmark's verb."""
    parser: argparse.ArgumentParser = sub.add_parser(check, help=help)
    return parser


def add_outputs(
    parser: argparse.ArgumentParser, what: str = "the summary", frames: str = ""
) -> None:
    """`--json` (print `what` as JSON instead of the table) and, when `frames` is its help,
    `--frames DIR` (a folder the check writes images into)."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON")
    if frames:
        parser.add_argument("--frames", type=OUT_DIR, metavar="DIR", help=frames)


def print_summary(summary: Any, as_json: bool, table: Callable[[Any], str]) -> None:
    """The check's summary on stdout: JSON with `--json`, else `table(summary)`."""
    print(json.dumps(summary) if as_json else table(summary))


def reference_failed(spec: ReferenceSpec, exc: BaseException) -> int:
    """Say in one line on stderr that `spec`'s reference failed, and why; exit status 1."""
    sys.stderr.write(f"error: the {spec.label} failed: {one_line(str(exc))}\n")
    return 1


__all__ = ["add_check", "add_checks", "add_outputs", "print_summary", "reference_failed"]
