"""`metasim serve`: expose a metasim policy over the openpi websocket protocol."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(verbs: Any) -> None:
    verbs.add_parser("serve", help="serve a metasim policy over the openpi websocket protocol")


def run_serve_cli(args: argparse.Namespace) -> int:
    raise NotImplementedError("metasim serve is being built (issue 5)")
