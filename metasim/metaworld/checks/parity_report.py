"""`metasim metaworld parity`'s output: the per-pair summary (JSON-able), the markdown
table, and the run over drawn pairs with the pass/fail verdict."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from metasim.metaworld.checks.parity import (
    EEF_TARGET_M,
    OBJECT_TARGET_M,
    PSNR_TARGET_DB,
    PairResult,
    draw_pairs,
    run_pair,
    smooth_actions,
)
from metasim.metaworld.reference.simulator import MetaWorldRef
from metasim.reference.parity import before_contact


def _mm(x: float) -> float:
    return round(float(x) * 1e3, 4)


def _contact(c: list[str]) -> str:
    """`robot geom (robot body) -> other geom (other body)`; `-` for none."""
    if not c:
        return "-"
    rb, rg, ob, og = c
    return f"{rg or rb + '/?'} ({rb}) -> {og or ob + '/?'} ({ob})"


def pair_summary(r: PairResult) -> dict[str, Any]:
    """One pair as plain data (millimetres, dB, seconds)."""
    free = r.free_steps
    return {
        "task": r.task,
        "variation": r.variation,
        "steps": r.steps,
        "eef_before_contact_mm": _mm(r.eef_before_contact()),
        "eef_max_mm": _mm(r.eef.max()),
        "control_vs_reference_before_contact_mm": _mm(before_contact(r.control_ref, free)),
        "contact_step": r.contact_step,
        "first_contact": r.contact,
        "untouched_max_mm": _mm(r.untouched_max()),
        "objects": {
            n: {"max_mm": _mm(e.max()), "touched": r.touched[n]} for n, e in r.objects.items()
        },
        "psnr_db": round(r.psnr_db, 2),
        "part_step": r.part_step,
        "part_contact": r.part_contact,
        "metasim_vs_control_max_mm": round(r.control_max() * 1e3, 9),
        "metasim_vs_control_eef_max_mm": round(float(r.eef_control.max()) * 1e3, 12),
        "cause": r.cause() if r.part_step or r.control_max() else "",
        "misses": r.misses(),
        "seconds": {k: round(v, 2) for k, v in r.seconds.items()},
    }


def save_frames(folder: Path, r: PairResult) -> None:
    """`<task>-v<k>-{metasim,reference}.png` of a pair's first frames."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    for name, image in r.frames.items():
        Image.fromarray(image).save(folder / f"{r.task}-v{r.variation}-{name}.png")


def run_parity(
    pairs: int, seed: int, tasks: list[str], *, steps: int = 100, benchmark: str = "MT50",
    camera: str = "corner", size: int = 240, ref: MetaWorldRef | None = None,
    progress: Callable[[str], None] | None = None, frames: Path | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Parity on `pairs` (task, variation) pairs drawn from `seed` over `tasks`; each pair's
    actions from its own stream (seed, pair index). Returns the summary: settings, `pairs`
    (one `pair_summary` each), `ok` (every pair meets every target)."""
    drawn = draw_pairs(pairs, seed, tasks)
    own = ref is None
    worker = MetaWorldRef() if ref is None else ref
    out = []
    try:
        for i, (task, k) in enumerate(drawn):
            actions = smooth_actions(steps, np.random.default_rng([seed, i]))
            result = run_pair(
                worker, task, k, actions, benchmark=benchmark, camera=camera, size=size
            )
            out.append(pair_summary(result))
            if frames is not None:
                save_frames(frames, result)
            if progress is not None:
                progress(f"{task} variation {k}: {out[-1]['misses'] or 'ok'}")
    finally:
        if own:
            worker.close()
    return {
        "seed": seed, "steps": steps, "benchmark": benchmark, "camera": camera, "size": size,
        "targets": {"eef_mm": EEF_TARGET_M * 1e3, "untouched_mm": OBJECT_TARGET_M * 1e3,
                    "psnr_db": PSNR_TARGET_DB},
        "pairs": out, "ok": all(not p["misses"] for p in out),
    }  # fmt: skip


def format_table(summary: dict[str, Any]) -> str:
    """The summary as a markdown table plus one line per parting."""
    s = summary
    lines = [
        f"Meta-World parity: {len(s['pairs'])} pairs ({s['benchmark']}, seed {s['seed']}), "
        f"{s['steps']} steps of smooth random actions, camera {s['camera']} {s['size']}px",
        "",
        "| task | var | eef before contact mm | first contact step | untouched objects mm "
        "| PSNR dB | parts at step | metasim vs control mm | ok |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p in s["pairs"]:
        lines.append(
            f"| {p['task']} | {p['variation']} | {p['eef_before_contact_mm']:.4f} "
            f"| {p['contact_step'] or 'none'} | {p['untouched_max_mm']:.4f} | {p['psnr_db']:.2f} "
            f"| {p['part_step'] or 'never'} | {p['metasim_vs_control_max_mm']:.2e} "
            f"| {'yes' if not p['misses'] else ', '.join(p['misses'])} |"
        )
    lines.append("")
    for p in s["pairs"]:
        if p["part_step"]:
            lines.append(
                f"- {p['task']} v{p['variation']}: parts at step {p['part_step']} "
                + (
                    f"after the contact {_contact(p['part_contact'])}"
                    if p["part_contact"]
                    else "before any robot contact"
                )
                + f"; why: {p['cause']}"
            )
    t = s["targets"]
    lines.append(
        f"targets: eef <= {t['eef_mm']} mm until the first contact, untouched objects <= "
        f"{t['untouched_mm']} mm, PSNR >= {t['psnr_db']} dB: {'all met' if s['ok'] else 'MISSED'}"
    )
    return "\n".join(lines)
