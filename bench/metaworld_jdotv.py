"""What stepping the mocap weld as MuJoCo 3.3.0 does costs (`physics.equality_jdotv:
false`: every physics step split into mj_step1, the equality rows' reference acceleration
recomputed, mj_step2) against the same scene stepped by one `mj_step(nstep)` call
(`equality_jdotv: true`), in the same process, interleaved, medians of the repeats.

    MUJOCO_GL=egl .venv/bin/python bench/metaworld_jdotv.py [--task pick-place-v3]
        [--num-envs 1 16] [--steps 200] [--repeats 4]

Prints JSON: env steps/s of each and the ratio legacy / plain per env count. Needs the
Meta-World reference venv (the scene's reset states come from it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.scene.compile import compile_scene
from metasim.scene.schema import Scene
from metasim.scene.sources import load_task_scene


def rate(scene: Scene, num_envs: int, steps: int) -> float:
    """Env steps/s of `steps` random mocap steps of `num_envs` envs (reset not timed)."""
    env = MetasimVectorEnv(compile_scene(scene), num_envs, action_space="mocap_delta")
    acts = np.random.default_rng(0).uniform(-1, 1, size=(steps, num_envs, 4))
    try:
        env.reset(seed=0)
        t0 = time.perf_counter()
        for a in acts:
            env.step(a)
        return steps * num_envs / (time.perf_counter() - t0)
    finally:
        env.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="pick-place-v3")
    ap.add_argument("--num-envs", type=int, nargs="+", default=[1, 16])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=4)
    args = ap.parse_args()
    legacy = load_task_scene(f"metaworld:{args.task}")
    assert not legacy.physics.equality_jdotv
    plain = legacy.model_copy(
        update={"physics": legacy.physics.model_copy(update={"equality_jdotv": True})}
    )
    out: dict[str, dict[str, float]] = {}
    for n in args.num_envs:
        runs: dict[str, list[float]] = {"legacy": [], "plain": []}
        for _ in range(args.repeats):
            runs["legacy"].append(rate(legacy, n, args.steps))
            runs["plain"].append(rate(plain, n, args.steps))
        med = {k: statistics.median(v) for k, v in runs.items()}
        out[str(n)] = {**med, "ratio": med["legacy"] / med["plain"]}
    print(json.dumps({"task": args.task, "steps": args.steps, "envs": out}, indent=1))


if __name__ == "__main__":
    main()
