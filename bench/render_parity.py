"""Image parity of MuJoCo Warp's ray tracer against MuJoCo's OpenGL, per benchmark camera.

    PYTHONPATH=. MUJOCO_GL=egl python bench/render_parity.py --benchmark libero --out p.json
    PYTHONPATH=. MUJOCO_GL=egl python bench/render_parity.py --benchmark metaworld --held-out 10

The tasks: the first `--tasks` of the benchmark's table suite (LIBERO: libero_10;
Meta-World: MT10), the tasks `--refs`, or with `--held-out N` N tasks drawn at random
(`--seed`) from the tasks neither table nor tuning used (LIBERO: libero_90, libero_goal,
libero_object; Meta-World: MT50 outside MT10; the settings were tuned on libero_spatial/0,
libero_90/5, assembly-v3 and bin-picking-v3). Per task `--states` random states (reset with a seed,
then random actions), every camera the presets use (`--cameras` for others) at the preset
size, rendered by both renderers from the same states: PSNR and MAE per camera (mean, min
over tasks) for each `--spp` (samples per pixel per axis; the other settings are the
scene's `render.raytrace` defaults); with `--without SETTING` (a boolean of
`render.raytrace`, e.g. `sites`) also the same frames with that setting off (the
before/after of a feature). Prints a Markdown table (docs/rendering.md) and writes the
figures as JSON with `--out`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from metasim.bench.image_parity import task_parity
from metasim.scene.render_schema import RaytraceSpec
from metasim.scene.sources import all_suites

BENCHMARKS = {
    # suite, cameras, preset size (openpi's LIBERO render size; Meta-World's 480x480)
    "libero": ("libero_10", ["agentview", "robot0_eye_in_hand"], (256, 256)),
    "metaworld": (
        "metaworld_mt10",
        ["corner", "corner2", "corner3", "topview", "robot/gripperPOV"],
        (480, 480),
    ),
}
HELD_OUT = {  # (suites drawn from, tasks left out: the tables' and the tuning tasks)
    "libero": (
        ("libero_90", "libero_goal", "libero_object"),
        ("libero_90/5", "libero_spatial/0"),
    ),
    "metaworld": (("metaworld_mt50",), ("assembly-v3", "bin-picking-v3")),
}


def held_out(benchmark: str, n: int, seed: int) -> list[str]:
    """`n` tasks drawn at random (numpy seed `seed`) from the benchmark's held-out pool."""
    suites = all_suites()
    pool_suites, tuned = HELD_OUT[benchmark]

    def name(ref: str) -> str:  # MT10's "metaworld:MT10/reach-v3" is MT50's reach-v3
        task = ref.split(":", 1)[-1]
        return task.rsplit("/", 1)[-1] if benchmark == "metaworld" else task

    table = {name(r) for r in suites[BENCHMARKS[benchmark][0]]}
    pool = sorted({r for s in pool_suites for r in suites[s] if name(r) not in table})
    pool = [r for r in pool if name(r) not in tuned]
    pick = np.random.default_rng(seed).choice(len(pool), size=min(n, len(pool)), replace=False)
    return [pool[i] for i in sorted(pick)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--benchmark", choices=sorted(BENCHMARKS), required=True)
    p.add_argument("--tasks", type=int, default=10)
    p.add_argument("--held-out", type=int, default=0, metavar="N")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skip", nargs="*", default=[], metavar="REF", help="tasks left out")
    p.add_argument("--refs", nargs="+", default=None, metavar="REF", help="these tasks")
    p.add_argument("--cameras", nargs="+", default=None)
    p.add_argument("--states", type=int, default=2)
    p.add_argument("--spp", type=int, nargs="+", default=[3, 1])
    p.add_argument("--size", type=int, nargs=2, default=None, metavar=("W", "H"))
    p.add_argument("--without", nargs="*", default=[], metavar="SETTING")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    suite, cams, size = BENCHMARKS[args.benchmark]
    cams = args.cameras or cams
    size = tuple(args.size) if args.size else size
    if args.refs:
        tasks = list(args.refs)
    elif args.held_out:
        tasks = held_out(args.benchmark, args.held_out, args.seed)
    else:
        tasks = all_suites()[suite][: args.tasks]
    tasks = [t for t in tasks if t not in args.skip]
    print("tasks:", " ".join(tasks), file=sys.stderr)
    keys = [""] + [f"@no-{w}" for w in args.without]
    rows: dict[int, dict[str, list[tuple[float, float]]]] = {}
    for spp in args.spp:
        rows[spp] = {c + k: [] for k in keys for c in cams}
        for ref in tasks:
            t0 = time.perf_counter()
            settings = RaytraceSpec(samples_per_pixel=spp)
            variants = {f"no-{w}": settings.model_copy(update={w: False}) for w in args.without}
            res = task_parity(ref, cams, size, settings, args.states, seed=1, variants=variants)
            for c in rows[spp]:
                rows[spp][c].append((res[c]["psnr"], res[c]["mae"]))
            psnrs = " ".join(f"{res[c]['psnr']:.1f}" for c in rows[spp])
            print(f"spp={spp} {ref}: {psnrs} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    print(f"| camera ({size[0]}x{size[1]}) | spp | PSNR mean (dB) | PSNR min | MAE mean |")
    print("|---|---:|---:|---:|---:|")
    out = {}
    for spp, per_cam in rows.items():
        for c, vals in per_cam.items():
            ps, ma = np.array([v[0] for v in vals]), np.array([v[1] for v in vals])
            print(f"| {c} | {spp} | {ps.mean():.1f} | {ps.min():.1f} | {ma.mean():.1f} |")
            out[f"{c}/spp{spp}"] = {"psnr": ps.tolist(), "mae": ma.tolist()}
    if args.out:
        args.out.write_text(json.dumps({"tasks": tasks, "size": size, "rows": out}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
