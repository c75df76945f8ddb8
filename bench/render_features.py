"""Speed cost of the warp rig's OpenGL features (`render.raytrace.reflections`, `mipmaps`)
on this machine, as ratios of render time against the rig with both off, measured in one
run, interleaved in a rotating order (median of `--repeats`): every camera of the
observation, `--envs` envs.

    PYTHONPATH=. MUJOCO_GL=egl python bench/render_features.py --scene metaworld:MT10/reach-v3 \
        --cameras corner2 topview
    PYTHONPATH=. MUJOCO_GL=egl python bench/render_features.py --scene libero:libero_spatial/0 \
        --cameras agentview robot0_eye_in_hand

Prints one JSON line per variant: milliseconds per render and the ratio to `off`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from metasim.bench.image_parity import random_states
from metasim.scene.render_schema import RaytraceSpec
from metasim.sim.cameras import View

VARIANTS = {
    "off": {"reflections": False, "mipmaps": False},
    "reflections": {"mipmaps": False},
    "mipmaps": {"reflections": False},
    "both (default)": {},
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scene", required=True)
    p.add_argument("--cameras", nargs="+", required=True)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--envs", type=int, default=1)
    p.add_argument("--spp", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    from metasim.envs.vec_env import MetasimVectorEnv
    from metasim.scene.sources import compile_task

    env = MetasimVectorEnv(compile_task(args.scene), num_envs=args.envs, autoreset=False)
    random_states(env, 1, 4)
    views = [View(c, args.size, args.size) for c in args.cameras]
    rigs = {
        name: env.handler.camera_rig(views, "warp", RaytraceSpec(samples_per_pixel=args.spp, **kw))
        for name, kw in VARIANTS.items()
    }
    times: dict[str, list[float]] = {name: [] for name in rigs}
    for rig in rigs.values():
        rig.render()  # compile and warm
    names = list(rigs)
    for k in range(args.repeats):  # the order rotated each round, against drifts in load
        for name in names[k % len(names) :] + names[: k % len(names)]:
            rig = rigs[name]
            t0 = time.perf_counter()
            rig.render()
            times[name].append(time.perf_counter() - t0)
    env.close()
    base = statistics.median(times["off"])
    for name, ts in times.items():
        ms = statistics.median(ts) * 1e3
        row = {"scene": args.scene, "variant": name, "size": args.size, "envs": args.envs}
        print(json.dumps(row | {"ms": round(ms, 1), "ratio_to_off": round(ms / base / 1e3, 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
