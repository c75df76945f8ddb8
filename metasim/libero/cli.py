"""`metasim check parity --benchmark libero --suite S --task I --init K [--steps N]
[--seed R] [--json] [--frames DIR]`: an imported LIBERO task against LIBERO's own
simulator; `metasim check modeldiff --benchmark libero --suite S --task I [--init K]
[--json]`: its compiled model's fields against the reference's."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from metasim.cli.verbs import verb
from metasim.guards import SEED, bounded_int, check_out_dir
from metasim.libero import cli_xcheck
from metasim.reference.checkcli import (
    add_check,
    add_checks,
    add_outputs,
    print_summary,
    reference_failed,
)

LIBERO_HORIZON = 1000  # LIBERO's episode horizon (max_steps of its suites), in control steps


PARITY_HELP = (
    "run the reference and metasim from one init state with the same seeded smooth random "
    "osc_pose actions; print per-step errors and the first frame's PSNR"
)
MODELDIFF_HELP = (
    "compare every numeric field of the imported task's compiled MjModel with the "
    "reference's live model, element by element; exit 1 on an unlisted difference"
)


def add_parser(verbs: Any) -> None:
    """Add the `libero` verb and its sub-verbs `parity`, `modeldiff` and `xcheck`."""
    sub = add_checks(verbs, "libero", "LIBERO tools (checks against the reference simulator)")
    par = _task_check(sub, "parity", PARITY_HELP, init_default=None)
    par.add_argument(
        "--steps", type=bounded_int(1, LIBERO_HORIZON), default=100, help="control steps (20 Hz)"
    )
    par.add_argument("--seed", type=SEED, default=0, help="seeds the actions and env.reset")
    add_outputs(par, frames="write both first agentview frames as PNG")
    add_outputs(_task_check(sub, "modeldiff", MODELDIFF_HELP, init_default=0))
    cli_xcheck.add_parser(sub)


def _task_check(sub: Any, check: str, help: str, init_default: int | None) -> Any:
    """The sub-verb `check` with the arguments that name one task and init state (the
    init state required when `init_default` is None)."""
    parser = add_check(sub, check, help)
    parser.add_argument("--suite", required=True, help="libero_spatial|object|goal|10|90")
    parser.add_argument(
        "--task", type=bounded_int(0, 999), required=True, help="task index in LIBERO's order"
    )
    init = (
        "init state index (0..49)" if init_default is None else "init state the reference resets to"
    )
    parser.add_argument(
        "--init", type=bounded_int(0, 9999), required=init_default is None,
        default=init_default, help=init,
    )  # fmt: skip
    return parser


def _rows(steps: int) -> list[int]:
    """About 20 step indexes (0-based) to print, the last one included."""
    every = max(1, steps // 20)
    return sorted({*range(every - 1, steps, every), steps - 1})


def format_table(summary: dict[str, Any]) -> str:
    """A readable per-step table (mm) and the totals of a `ParityResult.summary()`."""
    s, per = summary, summary["per_step"]
    lines = [
        f"{s['suite']} task {s['task']} ({s['name']}), init {s['init']}, "
        f"{s['steps']} steps, seed {s['seed']}",
        f"{'step':>5} {'eef mm':>10} {'gripper mm':>11} {'objects mm':>11} {'untouched mm':>13}",
    ]
    for t in _rows(s["steps"]):
        lines.append(
            f"{t + 1:>5} {per['eef_mm'][t]:>10.4f} {per['gripper_mm'][t]:>11.4f} "
            f"{per['object_mm'][t]:>11.4f} {per['untouched_object_mm'][t]:>13.4f}"
        )
    lines.append("objects: max error mm, how far it moved in the reference mm")
    for name, o in s["objects"].items():
        lines.append(
            f"  {name:<32} {o['max_mm']:>10.4f} {o['ref_moved_mm']:>10.2f}  "
            f"{'touched' if o['touched'] else ''}"
        )
    lines += [
        f"end effector: max {s['eef_max_mm']:.4f} mm, median {s['eef_median_mm']:.4f} mm "
        "(target <= 1 mm)",
        f"gripper: max {s['gripper_max_mm']:.4f} mm",
        f"untouched objects: max {s['untouched_object_max_mm']:.4f} mm (target <= 1 mm)",
        f"first agentview frame: PSNR {s['psnr_db']:.2f} dB (target >= 30 dB)",
        f"bodies right after the init state: max {s['init_body_mm']:.4f} mm apart",
        f"robot first hit something: step {s['contact_step'] or 'never'} "
        f"({s['contact_kind'] or '-'}); end effector before that: "
        f"max {s['eef_before_contact_max_mm']:.4f} mm",
        "misses: " + (", ".join(s["misses"]) or "none"),
    ]
    return "\n".join(lines)


def _save_frames(folder: str, frames: dict[str, np.ndarray]) -> None:
    from PIL import Image

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for name, image in frames.items():
        Image.fromarray(image).save(out / f"agentview_{name}.png")


def run(args: argparse.Namespace) -> int:
    """Run `metasim check parity --benchmark libero`; exit 0 (the misses are printed, not
    an error), 1 when the reference simulator cannot run, 2 for bad arguments."""
    from metasim.libero.checks import parity
    from metasim.libero.reference.simulator import SPEC, RefSimError

    if args.libero_verb == "modeldiff":
        return run_modeldiff(args)
    if args.libero_verb == "xcheck":
        return cli_xcheck.run(args)
    parity.check_args(args.suite, args.task, args.init, args.steps)
    try:
        result = parity.run_parity(args.suite, args.task, args.init, args.steps, args.seed)
    except RefSimError as exc:
        return reference_failed(SPEC, exc)
    if args.frames:
        check_out_dir(args.frames, "--frames")
        _save_frames(args.frames, result.frames)
    print_summary(result.summary(), args.json, format_table)
    return 0


def run_modeldiff(args: argparse.Namespace) -> int:
    """Run `metasim check modeldiff --benchmark libero`: exit 0 when every difference is
    listed, 1 when one is not or the reference simulator cannot run, 2 for bad arguments."""
    from metasim.libero.checks import modeldiff, parity
    from metasim.libero.reference.simulator import SPEC, RefSimError

    parity.check_args(args.suite, args.task, args.init, 1)
    try:
        result = modeldiff.run_modeldiff(args.suite, args.task, args.init)
    except RefSimError as exc:
        return reference_failed(SPEC, exc)
    print_summary(result.summary(), args.json, modeldiff.format_diff)
    return 1 if result.unlisted else 0


verb("libero", add_parser, run)
