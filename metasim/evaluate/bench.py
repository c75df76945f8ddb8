"""`metasim bench physics`: the eval loop's speed as a ratio of raw MuJoCo's, same run.

The eval loop (scripted expert, state observations, IK, success checks, autoreset) runs
`steps` control steps over `num_envs` envs. The reference is `mujoco.rollout` on the same
compiled model, the same number of envs and threads, the same substeps, replaying the
controls the loop produced. ratio = (env steps/s x substeps) / rollout physics steps/s.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import mujoco
import numpy as np
from mujoco import rollout

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.rollout import policy_context
from metasim.policies.base import make_policy
from metasim.scene import compile_file


def bench_physics(
    scene: str, num_envs: int, steps: int = 200, threads: int | None = None, backend: str = "mujoco"
) -> dict[str, Any]:
    compiled = compile_file(scene)
    env = MetasimVectorEnv(compiled, num_envs=num_envs, backend=backend, nthread=threads)
    policy = make_policy("scripted", policy_context(env, "ee_delta", {}))
    obs, _ = env.reset(seed=0)
    policy.reset(compiled.scene.task.instruction)
    state0 = env.handler.get_state()
    ctrls = np.zeros((steps, num_envs, compiled.model.nu))
    for _ in range(10):  # warm-up: thread pool, caches
        obs, *_ = env.step(policy.act(obs)[:, 0])
    obs, _ = env.reset(seed=0)
    policy.reset(compiled.scene.task.instruction)
    t0 = time.perf_counter()
    for i in range(steps):
        obs, _, _, _, extras = env.step(policy.act(obs)[:, 0])
        if "episode" in extras:
            policy.reset(compiled.scene.task.instruction, extras["episode"]["env_ids"])
        ctrls[i] = env._ctrl
    loop_s = time.perf_counter() - t0
    nthread = getattr(env.handler, "nthread", 1)
    env.close()

    m = compiled.model
    sub = compiled.substeps
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    init = np.zeros((num_envs, mujoco.mj_stateSize(m, spec)))
    data = mujoco.MjData(m)
    for i in range(num_envs):
        data.qpos[:] = state0.qpos[i]
        data.qvel[:] = state0.qvel[i]
        data.ctrl[:] = state0.ctrl[i]
        mujoco.mj_getState(m, data, init[i], spec)
    control = np.repeat(np.swapaxes(ctrls, 0, 1), sub, axis=1)  # (B, steps * substeps, nu)
    datas = [mujoco.MjData(m) for _ in range(nthread)]
    with rollout.Rollout(nthread=nthread) as r:
        r.rollout([m] * num_envs, datas, init, control[:, :sub])  # warm-up
        t0 = time.perf_counter()
        r.rollout([m] * num_envs, datas, init, control)
        ref_s = time.perf_counter() - t0
    env_steps = steps * num_envs
    loop_phys = env_steps * sub / loop_s
    ref_phys = env_steps * sub / ref_s
    return {
        "scene": compiled.scene.name,
        "backend": backend,
        "num_envs": num_envs,
        "threads": nthread,
        "substeps": sub,
        "control_steps": steps,
        "eval_env_steps_per_s": round(env_steps / loop_s, 1),
        "eval_physics_steps_per_s": round(loop_phys, 1),
        "rollout_physics_steps_per_s": round(ref_phys, 1),
        "ratio": round(loop_phys / ref_phys, 3),
    }


def run_physics_bench_cli(args: argparse.Namespace) -> int:
    from metasim.errors import MetasimInputError

    if args.backend != "mujoco":
        raise MetasimInputError(
            "--backend", [f"backend {args.backend!r} is not available yet; use mujoco"]
        )
    if any(n < 1 for n in args.num_envs) or args.steps < 1:
        raise MetasimInputError("command line", ["--num-envs and --steps must be >= 1"])
    results = [
        bench_physics(args.scene, n, args.steps, args.threads, args.backend) for n in args.num_envs
    ]
    print(json.dumps(results if len(results) > 1 else results[0], indent=2))
    return 0
