"""`metasim bench physics --scene metaworld:<task>`: metasim's vector env on a Meta-World
task next to the package's own gymnasium loop (metaworld 3.1.1 on MuJoCo 3.3.0 in its
reference venv, one env), measured in the same run.

Both sides step uniform random 4-D actions (the package's native `mocap_delta`: mocap
position delta x 0.01 m, gripper effort), five 2.5 ms physics substeps per env step, and
reset when an episode ends (counted in the time). metasim's side is `MetasimVectorEnv`
(state observations, the task's success check every step, autoreset from the recorded
variations) at each env count; the package's is `env.step` in a loop inside its worker
(timed there: no pipe cost). Neither renders.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.metaworld.importer.task_refs import parse_ref
from metasim.scene.sources import compile_task

WARMUP = 5  # env steps before timing (first-call costs: kinematics buffers, caches)


def metasim_rate(ref: str, num_envs: int, steps: int, backend: str = "mujoco") -> float:
    """Env-steps/s (num_envs x steps / seconds) of `MetasimVectorEnv` on Meta-World task
    `ref` with uniform random actions (num_envs, 4), autoreset on."""
    compiled = compile_task(ref)
    env = MetasimVectorEnv(
        compiled, num_envs=num_envs, backend=backend, action_space="mocap_delta", autoreset=True
    )
    try:
        rng = np.random.default_rng(0)
        acts = rng.uniform(-1.0, 1.0, size=(WARMUP + steps, num_envs, 4))
        env.reset(seed=0)
        for a in acts[:WARMUP]:
            env.step(a)
        start = time.perf_counter()
        for a in acts[WARMUP:]:
            env.step(a)
        seconds = time.perf_counter() - start
    finally:
        env.close()
    return num_envs * steps / seconds


def reference_rate(task: str, steps: int) -> dict[str, float]:
    """The package's own loop on `task` (MT1, variation 0): env-steps/s and the worker's
    start-up seconds (venv import and env construction excluded from the rate)."""
    from metasim.metaworld.reference.simulator import MetaWorldRef

    start = time.perf_counter()
    with MetaWorldRef() as ref:
        ref.bench_steps(task, WARMUP)  # builds MT1 once; the timed call reuses it
        load = time.perf_counter() - start
        seconds = ref.bench_steps(task, steps)
    return {"env_steps_per_s": steps / seconds, "load_s": load}


def bench_metaworld(
    ref: str, num_envs: list[int], steps: int = 200, reference: bool = True
) -> dict[str, Any]:
    """metasim's env-steps/s on `ref` at each env count and, with `reference`, the
    package's loop's in the same run, with ratios metasim / package (JSON-ready)."""
    _, _, task = parse_ref(ref)
    out: dict[str, Any] = {"scene": ref, "steps": steps, "actions": "uniform random mocap_delta"}
    out["metasim"] = {str(n): round(metasim_rate(ref, n, steps), 1) for n in num_envs}
    if reference:
        rates = reference_rate(task, steps)
        out["reference"] = round(rates["env_steps_per_s"], 1)
        out["reference_load_s"] = round(rates["load_s"], 2)
        out["ratio"] = {
            n: round(v / rates["env_steps_per_s"], 2) for n, v in out["metasim"].items()
        }
    return out
