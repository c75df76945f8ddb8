"""`metasim metaworld-compare`: `policy=metaworld_expert` in metasim next to the package's
own scripted policies on the same variations (`metasim.metaworld.compare`)."""

from __future__ import annotations

from typing import Any

from metasim.cli.verbs import verb
from metasim.metaworld import compare


def add_parser(verbs: Any) -> None:
    """Add the `metaworld-compare` verb to the `metasim` parser's `verbs`."""
    p = verbs.add_parser(
        "metaworld-compare",
        help="Meta-World: metasim's expert success per task next to the package's own "
        "scripted policies on the same variations, with a paired interval on the difference",
    )
    compare.add_arguments(p)


verb("metaworld-compare", add_parser, compare.run)
