"""Image parity of MuJoCo Warp's ray tracer against MuJoCo's OpenGL, per benchmark camera.

    PYTHONPATH=. MUJOCO_GL=egl python bench/render_parity.py --benchmark libero --out p.json
    PYTHONPATH=. MUJOCO_GL=egl python bench/render_parity.py --benchmark metaworld

For every task of the benchmark's held-out suite (LIBERO: libero_10; Meta-World: MT10;
the settings were tuned on libero_spatial/0, libero_90/5, assembly-v3 and
bin-picking-v3), `--states` random states (reset with a seed, then random actions), every
camera the presets use at the preset size, rendered by both renderers from the same
states: PSNR and MAE per camera (mean, min over tasks) for each `--spp` (samples per
pixel per axis; the other settings are the scene's `render.raytrace` defaults). Prints a
Markdown table (docs/rendering.md) and writes the figures as JSON with `--out`.
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--benchmark", choices=sorted(BENCHMARKS), required=True)
    p.add_argument("--tasks", type=int, default=10)
    p.add_argument("--states", type=int, default=2)
    p.add_argument("--spp", type=int, nargs="+", default=[3, 1])
    p.add_argument("--size", type=int, nargs=2, default=None, metavar=("W", "H"))
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    suite, cams, size = BENCHMARKS[args.benchmark]
    size = tuple(args.size) if args.size else size
    tasks = all_suites()[suite][: args.tasks]
    rows: dict[int, dict[str, list[tuple[float, float]]]] = {}
    for spp in args.spp:
        rows[spp] = {c: [] for c in cams}
        for ref in tasks:
            t0 = time.perf_counter()
            settings = RaytraceSpec(samples_per_pixel=spp)
            res = task_parity(ref, cams, size, settings, states=args.states, seed=1)
            for c in cams:
                rows[spp][c].append((res[c]["psnr"], res[c]["mae"]))
            psnrs = " ".join(f"{res[c]['psnr']:.1f}" for c in cams)
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
