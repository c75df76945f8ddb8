"""Parity sweep: every LIBERO task at init state 0 plus 40 random (task, init) pairs (fixed
seed), 100 steps each, with `metasim.libero.checks.parity`; one reference worker for all runs.

    nice -n 10 .venv/bin/python scripts/libero_parity_sweep.py --out .cache/libero-parity

Writes OUT/parity.jsonl (one `ParityResult.summary()` per run; resumable: runs already
there are skipped, runs that failed are retried), OUT/parity.md (the tables of
docs/log/libero.md) and OUT/frames/ (both first frames of each run). `--report` only
rewrites parity.md from parity.jsonl; `--explain` adds OUT/explain.md: where the robot
first hits something in each run whose end effector misses. `--shard i/n` runs every
n-th task group (for n processes writing n files; `--report` reads them all).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from metasim.libero.checks.parity import (
    EEF_TARGET_M,
    OBJECT_TARGET_M,
    PSNR_TARGET_DB,
    ParityRunner,
)
from metasim.libero.importer import paths
from metasim.libero.reference.simulator import ReferenceSim, RefSimError

PAIRS_SEED = 13
EXTRA_PAIRS = 40
Key = tuple[str, int, int]


def plan(extra: int = EXTRA_PAIRS, seed: int = PAIRS_SEED) -> list[list[Key]]:
    """Task groups in a seeded random order: each task's init 0 and any of the `extra`
    random (task, init in 1..49) pairs drawn for it (a task is loaded once per group)."""
    tasks = [(s, i) for s in paths.LIBERO_SUITES for i in range(len(paths.suite_tasks(s)))]
    rng = np.random.default_rng(seed)
    picks: set[tuple[int, int]] = set()
    while len(picks) < extra:
        picks.add((int(rng.integers(len(tasks))), int(rng.integers(1, 50))))
    groups = [[(s, i, 0)] for s, i in tasks]
    for t, init in sorted(picks):
        groups[t].append((*tasks[t], init))
    order = rng.permutation(len(groups))
    return [groups[k] for k in order]


def read_rows(out: Path) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(out.glob("parity*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


def _done(out: Path) -> set[Key]:
    return {(r["suite"], r["task"], r["init"]) for r in read_rows(out) if "error" not in r}


def _save_frames(folder: Path, key: Key, frames: dict[str, np.ndarray]) -> None:
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    for name, image in frames.items():
        Image.fromarray(image).save(folder / f"{key[0]}_{key[1]}_{key[2]}_{name}.png")


def sweep(out: Path, steps: int, seed: int, shard: tuple[int, int]) -> None:
    """Run every planned pair not yet in OUT (this shard's groups), appending rows."""
    out.mkdir(parents=True, exist_ok=True)
    done = _done(out)
    groups = [g for k, g in enumerate(plan()) if k % shard[1] == shard[0]]
    todo = [[key for key in g if key not in done] for g in groups]
    todo = [g for g in todo if g]
    print(f"{sum(map(len, todo))} runs to do in {len(todo)} task groups", flush=True)
    sink = out / ("parity.jsonl" if shard[1] == 1 else f"parity-{shard[0]}.jsonl")
    ref: ReferenceSim | None = None
    try:
        for group in todo:
            for key in group:
                if key in _done(out):  # another process took it meanwhile
                    continue
                if ref is None:
                    ref = ReferenceSim()
                    runner = ParityRunner(ref)
                start = time.perf_counter()
                try:
                    result = runner.run(*key, steps=steps, seed=seed)
                    row = result.summary()
                    _save_frames(out / "frames", key, result.frames)
                except (RefSimError, ValueError, RuntimeError) as exc:
                    traceback.print_exc()
                    row = {"suite": key[0], "task": key[1], "init": key[2], "error": str(exc)}
                    if isinstance(exc, RefSimError):  # the worker may be gone: a fresh one
                        ref.close()
                        ref = None
                with sink.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                took = time.perf_counter() - start
                print(f"{key} {took:.0f}s misses={row.get('misses', row.get('error'))}", flush=True)
    finally:
        if ref is not None:
            ref.close()


def _stats(rows: list[dict[str, Any]]) -> str:
    eef = np.array([r["eef_max_mm"] for r in rows])
    obj = np.array([r["untouched_object_max_mm"] for r in rows])
    psnr = np.array([r["psnr_db"] for r in rows])
    ok = sum(not r["misses"] for r in rows)
    return (
        f"{len(rows)} | {np.median(eef):.4f} | {eef.max():.3f} | {np.median(obj):.4f} | "
        f"{obj.max():.2f} | {np.median(psnr):.1f} | {psnr.min():.1f} | {ok}"
    )


def report(rows: list[dict[str, Any]]) -> str:
    """The markdown tables: per suite and overall, then every run that misses a target."""
    good = [r for r in rows if "error" not in r]
    lines = [
        f"Targets: end effector <= {EEF_TARGET_M * 1e3:g} mm, untouched objects <= "
        f"{OBJECT_TARGET_M * 1e3:g} mm, first-frame PSNR >= {PSNR_TARGET_DB:g} dB "
        "(errors are each run's maximum over its steps).",
        "",
        "| suite | runs | eef median mm | eef worst mm | untouched median mm | untouched worst mm"
        " | PSNR median dB | PSNR worst dB | runs meeting all |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for suite in paths.LIBERO_SUITES:
        part = [r for r in good if r["suite"] == suite]
        if part:
            lines.append(f"| {suite} | {_stats(part)} |")
    if good:
        lines.append(f"| **all** | {_stats(good)} |")
    lines += ["", "Runs missing a target:", ""]
    lines += [
        "| suite | task | init | misses | eef mm | untouched mm | PSNR dB | worst untouched |"
    ]
    lines += ["|---|---|---|---|---|---|---|---|"]
    for r in sorted(good, key=lambda r: (r["suite"], r["task"], r["init"])):
        if r["misses"]:
            untouched = {n: o["max_mm"] for n, o in r["objects"].items() if not o["touched"]}
            worst = max(untouched, key=lambda n: untouched[n]) if untouched else "-"
            lines.append(
                f"| {r['suite']} | {r['task']} | {r['init']} | {', '.join(r['misses'])} | "
                f"{r['eef_max_mm']:.3f} | {r['untouched_object_max_mm']:.2f} | "
                f"{r['psnr_db']:.1f} | {worst} |"
            )
    ok = {(r["suite"], r["task"], r["init"]) for r in good}
    failed = [r for r in rows if "error" in r and (r["suite"], r["task"], r["init"]) not in ok]
    if failed:
        lines += ["", "Runs that failed:", ""]
        lines += [f"- {r['suite']} {r['task']} init {r['init']}: {r['error']}" for r in failed]
    return "\n".join(lines) + "\n"


def _deepest(model: mujoco.MjModel, data: mujoco.MjData, body: int) -> float:
    """The deepest contact of body `body`'s subtree right now (m, negative inside)."""
    root = model.body_rootid[model.geom_bodyid[data.contact.geom]]  # (ncon, 2)
    mine = (root == body).any(axis=1)
    return float(data.contact.dist[: data.ncon][mine].min()) if mine.any() else 0.0


def explain(rows: list[dict[str, Any]]) -> str:
    """Why runs miss, from metasim alone (fixtures at their region centres, controller
    started as LIBERO does) replaying each missing run: for an end-effector miss, where
    the robot first hits something (`contacts.robot_hit`) next to the first step at which
    the run's end-effector error exceeded 0.01 mm; for an untouched object over 1 mm, how
    deep it starts inside another body and how far it moves in the first step."""
    from metasim.libero.checks.parity import prepare, smooth_actions, start_osc, step_metasim
    from metasim.robosuite.importer import robot

    ctrl = {
        "robot_init_qpos": np.array(robot.INIT_QPOS),
        "gripper_init_qpos": np.array([0.020833, -0.020833]),  # robosuite's PandaGripper
        "gripper_action": np.zeros(2),
    }
    eef_lines = ["| suite | task | init | eef mm | error > 0.01 mm from step | robot first hits |"]
    eef_lines += ["|---|---|---|---|---|---|"]
    obj_lines = ["| suite | task | init | object | error mm | starts inside by mm | "]
    obj_lines[0] += "moves in step 1 mm |"
    obj_lines += ["|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["suite"], r["task"], r["init"])):
        if "error" in r or not r["misses"]:
            continue
        sim = prepare(r["suite"], r["task"])
        model = sim.compiled.model
        data = mujoco.MjData(model)
        sim.mapping.apply(model, data, sim.task.init_states[r["init"]])
        moved = [n for n, o in r["objects"].items() if not o["touched"] and o["max_mm"] > 1.0]
        depth = [_deepest(model, data, model.body(n).id) for n in moved]
        start = data.xpos[[model.body(n).id for n in moved]].copy()
        osc = start_osc(sim, data, ctrl)
        steps = r["steps"] if "eef" in r["misses"] else 1  # the first step tells the rest
        track = step_metasim(sim, data, osc, smooth_actions(r["steps"], r["seed"])[:steps], moved)
        key = f"| {r['suite']} | {r['task']} | {r['init']} |"
        if "eef" in r["misses"]:
            parts = int(np.argmax(np.array(r["per_step"]["eef_mm"]) > 0.01)) + 1
            hit = f"{track['contact_kind']} at step {track['contact_step']}"
            eef_lines.append(
                f"{key} {r['eef_max_mm']:.3f} | {parts} | "
                f"{hit if track['contact_step'] else 'never'} |"
            )
        for k, name in enumerate(moved):
            step1 = np.linalg.norm(track["objects"][0, k] - start[k]) * 1e3
            obj_lines.append(
                f"{key} {name} | {r['objects'][name]['max_mm']:.2f} | {-depth[k] * 1e3:.1f} | "
                f"{step1:.1f} |"
            )
    return "\n".join([*eef_lines, "", *obj_lines]) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=".cache/libero-parity", help="folder for the results")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--seed", type=int, default=0, help="actions and env.reset seed")
    p.add_argument("--shard", default="0/1", help="i/n: run every n-th task group from i")
    p.add_argument("--report", action="store_true", help="only rewrite parity.md")
    p.add_argument("--explain", action="store_true", help="also write explain.md (eef misses)")
    args = p.parse_args(argv)
    out = Path(args.out)
    i, n = (int(v) for v in args.shard.split("/"))
    if not args.report:
        sweep(out, args.steps, args.seed, (i, n))
    rows = read_rows(out)
    (out / "parity.md").write_text(report(rows))
    if args.explain:
        (out / "explain.md").write_text(explain(rows))
    print(f"{len(rows)} rows -> {out / 'parity.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
