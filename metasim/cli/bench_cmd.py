"""`metasim bench physics|render`: benchmarks printed as JSON."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from metasim.paths import SCENES


def add_parser(verbs: Any) -> None:
    from metasim.evaluate import bench_render

    bench = verbs.add_parser("bench", help="benchmarks printed as JSON")
    bv = bench.add_subparsers(dest="bench_verb", required=True, parser_class=type(bench))
    phys = bv.add_parser("physics", help="eval-loop env steps/s next to raw mujoco.rollout")
    phys.add_argument("--scene", default=str(SCENES / "lift_cube.yaml"))
    phys.add_argument("--backend", default="mujoco")
    phys.add_argument("--num-envs", type=int, nargs="+", default=[64])
    phys.add_argument("--steps", type=int, default=200, help="control steps per measurement")
    phys.add_argument("--threads", type=int, default=None)
    phys.add_argument("--repeats", type=int, default=3, help="report the median of this many")
    bench_render.add_parser(bv)


def _physics(args: argparse.Namespace) -> int:
    from metasim.evaluate.bench import run_physics_bench_cli

    return run_physics_bench_cli(args)


def _render(args: argparse.Namespace) -> int:
    from metasim.evaluate.bench_render import run_render_bench_cli

    return run_render_bench_cli(args)


SUBVERBS: dict[str, Callable[[argparse.Namespace], int]] = {
    "physics": _physics,
    "render": _render,
}


def run(args: argparse.Namespace) -> int:
    return SUBVERBS[args.bench_verb](args)
