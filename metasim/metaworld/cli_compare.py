"""`metasim metaworld-compare`: the old spelling of `metasim metaworld xcheck`
(`metasim.metaworld.compare`); it still runs, and says what it is called now."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from metasim.cli.verbs import verb
from metasim.metaworld import compare


def add_parser(verbs: Any) -> None:
    """Add the `metaworld-compare` verb to the `metasim` parser's `verbs`."""
    compare.add_arguments(verbs.add_parser("metaworld-compare", help=compare.HELP))


def run(args: argparse.Namespace) -> int:
    code = compare.run(args)
    if code == 0:  # as for every old spelling: after a refusal its paragraph stays alone
        sys.stderr.write(
            "note: `metasim metaworld-compare` is now `metasim check xcheck --benchmark "
            "metaworld`\n"
        )
    return code


verb("metaworld-compare", add_parser, run)
