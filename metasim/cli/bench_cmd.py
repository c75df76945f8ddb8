"""`metasim bench physics|render|peers|cameras`: the parsers, and one run function per bench."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from metasim.cli.verbs import verb
from metasim.guards import NUM_ENVS, PSTATS, REPEATS, STEPS, THREADS, out_file
from metasim.paths import SCENES


def _physics_parser(bv: Any) -> None:
    phys = bv.add_parser("physics", help="eval-loop env steps/s next to raw mujoco.rollout")
    phys.add_argument(
        "--scene",
        default=str(SCENES / "lift_cube.yaml"),
        help="a task: a scene file or name, or PREFIX:REF of a task source (a source with "
        "its own reference simulator is measured next to it)",
    )
    phys.add_argument("--backend", default="mujoco")
    phys.add_argument("--num-envs", type=NUM_ENVS, nargs="+", default=[64])
    phys.add_argument("--steps", type=STEPS, default=200, help="control steps per measurement")
    phys.add_argument("--threads", type=THREADS, default=None)
    phys.add_argument("--repeats", type=REPEATS, default=3, help="report the median of this many")
    phys.add_argument(
        "--profile",
        type=out_file(PSTATS),
        default=None,
        help="write a cProfile of the eval loop here",
    )


def _render_parser(bv: Any) -> None:
    from metasim.bench import render

    render.add_parser(bv)


def _peers_parser(bv: Any) -> None:
    from metasim.bench import peers

    peers.add_parser(bv)


def _cameras_parser(bv: Any) -> None:
    from metasim.bench import cameras

    cameras.add_parser(bv)


def _run_cameras(args: argparse.Namespace) -> int:
    from metasim.bench.cameras import run_cameras_bench_cli

    return run_cameras_bench_cli(args)


def _run_physics(args: argparse.Namespace) -> int:
    from metasim.bench.physics import run_physics_bench_cli

    return run_physics_bench_cli(args)


def _run_render(args: argparse.Namespace) -> int:
    from metasim.bench.render import run_render_bench_cli

    return run_render_bench_cli(args)


def _run_peers(args: argparse.Namespace) -> int:
    from metasim.bench.peers import run_peers_bench_cli

    return run_peers_bench_cli(args)


# verb -> (adds its parser, runs it)
BENCHES: dict[str, tuple[Callable[[Any], None], Callable[[argparse.Namespace], int]]] = {
    "physics": (_physics_parser, _run_physics),
    "render": (_render_parser, _run_render),
    "peers": (_peers_parser, _run_peers),
    "cameras": (_cameras_parser, _run_cameras),
}


def add_parser(verbs: Any) -> None:
    """Add the `bench` verb and its sub-verbs to the `metasim` parser's `verbs`."""
    bench = verbs.add_parser("bench", help="benchmarks printed as JSON")
    bv = bench.add_subparsers(dest="bench_verb", required=True, parser_class=type(bench))
    for add, _ in BENCHES.values():
        add(bv)


def run(args: argparse.Namespace) -> int:
    """Run the bench that `args.bench_verb` names."""
    return BENCHES[args.bench_verb][1](args)


verb("bench", add_parser, run)
