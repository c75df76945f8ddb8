"""The registry of `metasim` verbs: each verb module registers its parser and its run.

Built-in verbs are the `*_cmd` modules of `metasim.cli`; a benchmark plug-in registers the
verb that runs its reference checks (LIBERO's `libero` comes from `metasim.libero.cli`).
`metasim.cli.main` builds the parser from whatever is registered, less the plug-ins' check
verbs: those are reached as `metasim check CHECK --benchmark NAME` only
(`metasim.cli.check_cmd`), one spelling per check.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from metasim.registry import Registry


class Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments in one paragraph with exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"error: {self.prog}: {message} (see '{self.prog} --help')\n")
        raise SystemExit(2)


@dataclass(frozen=True)
class Verb:
    """A verb: `add(subparsers)` declares its arguments, `run(args)` calls the library."""

    add: Callable[[Any], None]
    run: Callable[[argparse.Namespace], int]


# Verb name -> Verb; filled by the verb modules of metasim.cli and by plug-ins.
VERBS: Registry[Verb] = Registry("verb", packages=("metasim.cli",))


def verb(name: str, add: Callable[[Any], None], run: Callable[[argparse.Namespace], int]) -> Verb:
    """Register the verb `name` (its `add_parser` and its `run`)."""
    return VERBS.register(name, Verb(add, run))
