"""Speed cost of a splat background in the warp rig: the render time of a scene with a
synthetic scanned room (`--splats` Gaussians on a sphere shell around the workspace) as
a ratio of the same scene without it, measured in one run, interleaved (median of
`--repeats`), every world of `--envs` drawing the room.

    PYTHONPATH=. python bench/splat_render.py --scene lift_cube --splats 20000 --size 128

Prints one JSON line per variant: milliseconds per render and the ratio to `none`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from metasim.scene import compile_scene
from metasim.scene.render_schema import BackgroundSpec, RaytraceSpec
from metasim.scene.sources import resolve
from metasim.sim import get_backend
from metasim.sim.cameras import View
from metasim.splats import Splats, write_splat_ply


def shell(n: int, radius: float, seed: int = 0) -> Splats:
    """`n` round splats on a sphere of `radius` about the origin, random colours."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    size = radius * np.sqrt(4 * np.pi / n)  # about one splat spacing
    rgba = np.concatenate([rng.uniform(0.1, 0.9, (n, 3)), np.full((n, 1), 0.9)], axis=1)
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    return Splats(
        (d * radius).astype(np.float32),
        quat.astype(np.float32),
        np.full((n, 3), size, np.float32),
        rgba.astype(np.float32),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", default="lift_cube")
    ap.add_argument("--splats", type=int, default=20000)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--envs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=8)
    a = ap.parse_args()
    task = resolve(a.scene)
    base = task.scene()
    cam = base.cameras[0].name
    with tempfile.TemporaryDirectory() as tmp:
        write_splat_ply(Path(tmp) / "room.ply", shell(a.splats, 2.5))
        room = BackgroundSpec(splats=str(Path(tmp) / "room.ply"), pos=(0.5, 0.0, 0.5))
        rigs = {}
        for name, bg in (("none", None), ("splats", room)):
            compiled = compile_scene(base.model_copy(update={"background": bg}), Path(tmp))
            h = get_backend("mujoco")(compiled, a.envs)
            rigs[name] = h.camera_rig([View(cam, a.size, a.size)], "warp", RaytraceSpec())
            rigs[name].render()  # compile and warm up
        times: dict[str, list[float]] = {k: [] for k in rigs}
        for r in range(a.repeats):
            for name in list(rigs)[r % 2 :] + list(rigs)[: r % 2]:
                t = time.perf_counter()
                rigs[name].render()
                times[name].append(time.perf_counter() - t)
    ms = {k: 1000 * statistics.median(v) for k, v in times.items()}
    for k, v in ms.items():
        row = {"variant": k, "ms": round(v, 1), "ratio": round(v / ms["none"], 2)}
        print(json.dumps({**row, "splats": a.splats if k == "splats" else 0, "size": a.size,
                          "envs": a.envs, "camera": cam}))  # fmt: skip


if __name__ == "__main__":
    main()
