"""`metasim bench render`: observation rendering frames/s next to a bare mujoco.Renderer."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(bench_verbs: Any) -> None:
    bench_verbs.add_parser("render", help="camera frames/s next to a bare mujoco.Renderer")


def run_render_bench_cli(args: argparse.Namespace) -> int:
    raise NotImplementedError("metasim bench render is being built (issue 5)")
