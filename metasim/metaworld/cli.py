"""The Meta-World checks, run as `metasim check CHECK --benchmark metaworld [OPTIONS]`
(the plug-in verb `metaworld` that `metasim check` routes to).

`parity [--pairs N] [--seed S] [--steps T] [--benchmark B] [--tasks a,b] [--camera C]
[--size PX] [--json] [--frames DIR]`: imported Meta-World tasks against the package itself
(metaworld 3.1.1 on MuJoCo 3.3.0) on random (task, variation) pairs, with the raw-XML
MuJoCo 4 control run that says why they part (`metasim.metaworld.checks.parity`). Exit 0
when every pair meets every target, 1 when one misses or the reference cannot run, 2 for
bad arguments.

`modeldiff --task ENV`: every model field against the package's
(`metasim.metaworld.checks.parity_fields`); `xcheck`: the expert's success next to the
package's own policies (`metasim.metaworld.xcheck`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from metasim.cli.verbs import verb
from metasim.errors import MetasimInputError
from metasim.guards import SEED, bounded_int, check_out_dir
from metasim.reference.checkcli import (
    add_check,
    add_checks,
    add_outputs,
    print_summary,
    reference_failed,
)

CAMERAS = ("corner", "corner2", "corner3", "corner4", "topview", "behindGripper", "gripperPOV")
MAX_PATH_LENGTH = 500  # the package's episode length: rollouts cannot be longer


def add_parser(verbs: Any) -> None:
    """Add the `metaworld` verb and its sub-verbs `parity`, `modeldiff` and `xcheck`."""
    from metasim.metaworld import xcheck

    sub = add_checks(verbs, "metaworld", "Meta-World tools (checks against the package)")
    par = add_check(sub, "parity", PARITY_HELP)
    par.add_argument(
        "--pairs", type=bounded_int(1, 2500), default=10, help="(task, variation) pairs"
    )
    par.add_argument("--seed", type=SEED, default=None, help="draws the pairs and the actions")
    par.add_argument("--steps", type=bounded_int(1, MAX_PATH_LENGTH), default=100)
    _add_variations(par)
    par.add_argument("--tasks", default="", help="comma-separated env names (default: MT50)")
    par.add_argument("--camera", choices=CAMERAS, default="corner", help="first-frame camera")
    par.add_argument("--size", type=bounded_int(16, 1024), default=240, help="frame side, px")
    add_outputs(par, frames="write each pair's two first frames as PNG")
    md = add_check(sub, "modeldiff", MODELDIFF_HELP)
    md.add_argument("--task", required=True, help="env name, e.g. pick-place-v3")
    md.add_argument("--variation", type=bounded_int(0, 49), default=0)
    _add_variations(md)
    add_outputs(md, "the differences")
    xcheck.add_arguments(add_check(sub, "xcheck", xcheck.HELP))


PARITY_HELP = (
    "run the package (MuJoCo 3.3), metasim and the raw task XML in MuJoCo 4 from the same "
    "variation with the same smooth random actions; compare end effector, objects and the "
    "first frame; say where and why the runs part"
)
MODELDIFF_HELP = (
    "every model field that differs between the package's task XML compiled by MuJoCo 3.3.0 "
    "and 4.0, and between metasim's model and the reference's live model of one variation, "
    "with its reason; exit 1 on a difference without one"
)


def _add_variations(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--benchmark", choices=("MT50", "MT10", "MT1"), default="MT50",
        help="whose variations: MT50 (default) or MT10 (their seed-0 draws), MT1 (per task)",
    )  # fmt: skip


def _tasks(text: str, benchmark: str, flag: str = "--tasks") -> list[str]:
    """The env names to draw from: `flag`'s (checked) or the benchmark's (MT50's for MT1)."""
    from metasim.metaworld.importer import paths
    from metasim.metaworld.importer.source import benchmark_tasks

    bench = "MT50" if benchmark == "MT1" else benchmark
    allowed = benchmark_tasks()[f"{bench}/train"] if bench != "MT50" else paths.task_names()
    if not text.strip():
        return list(allowed)
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in names if t not in allowed]
    if bad:
        raise MetasimInputError(
            flag, [f"unknown task(s) {bad} for {benchmark}; expected env names such as "
                        f"{allowed[0]!r} (one of {len(allowed)})"],
        )  # fmt: skip
    return names


def _progress(line: str) -> None:
    sys.stderr.write(line + "\n")


def run(args: argparse.Namespace) -> int:
    """Run the check `parity|modeldiff|xcheck` (see the module doc for the exit
    codes; xcheck's are `metasim.metaworld.xcheck`'s)."""
    from metasim.metaworld.checks.parity import DEFAULT_SEED
    from metasim.metaworld.checks.parity_report import format_table, run_parity
    from metasim.metaworld.reference.simulator import SPEC, MetaWorldRefError

    if args.metaworld_verb == "modeldiff":
        return run_modeldiff(args)
    if args.metaworld_verb == "xcheck":
        from metasim.metaworld import xcheck

        return xcheck.run(args)
    tasks = _tasks(args.tasks, args.benchmark)
    if args.frames:
        check_out_dir(args.frames, "--frames")
    seed = DEFAULT_SEED if args.seed is None else args.seed
    note = None if args.json else _progress
    try:
        summary = run_parity(
            args.pairs, seed, tasks, steps=args.steps, benchmark=args.benchmark,
            camera=args.camera, size=args.size, progress=note,
            frames=Path(args.frames) if args.frames else None,
        )  # fmt: skip
    except MetaWorldRefError as exc:
        return reference_failed(SPEC, exc)
    print_summary(summary, args.json, format_table)
    return 0 if summary["ok"] else 1


def run_modeldiff(args: argparse.Namespace) -> int:
    """`metasim check modeldiff --benchmark metaworld`: exit 0 when every difference has
    its reason."""
    from metasim.metaworld.checks import parity_fields as pf
    from metasim.metaworld.reference.init_states import init_states
    from metasim.metaworld.reference.simulator import ensure_venv

    names = _tasks(args.task, args.benchmark, "--task")
    if len(names) != 1 or not args.task.strip():
        raise MetasimInputError("--task", [f"expected one env name, got {args.task!r}"])
    task = names[0]
    python = ensure_venv()
    states = init_states(task, args.benchmark, "train", 0, range(50))
    rows = [("3.3.0 vs 4.0 compile", d) for d in pf.version_diff(task, python)]
    rows += [("metasim vs live", d) for d in pf.live_diff(task, args.variation, python, states)]
    out = [
        {"compare": c, "field": d.field, "element": d.element, "ours": [str(v) for v in d.ours],
         "theirs": [str(v) for v in d.theirs], "reason": pf.reason(d, task)}
        for c, d in rows
    ]  # fmt: skip
    if args.json:
        print(json.dumps(out))
    else:
        for r in out:
            why = r["reason"] or "UNLISTED"
            print(f"{r['compare']:<22} {r['field']:<22} {r['element']:<24} {why}")
    return 1 if any(not r["reason"] for r in out) else 0


verb("metaworld", add_parser, run)
