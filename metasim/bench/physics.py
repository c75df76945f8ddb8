"""`metasim bench physics`: the eval loop's speed as a ratio of raw MuJoCo's, same run.

The evaluation loop itself (the one `metasim eval` runs: scripted expert, state
observations, IK, success checks, episode records and restarts) runs `steps` control
steps over `num_envs` envs. The reference is `mujoco.rollout` on the same
compiled model, the same number of envs and threads, the same substeps, replaying the
controls the loop produced. ratio = (env steps/s x substeps) / rollout physics steps/s.

With another backend (`--backend mjx`) it compares raw handler stepping instead: the
backend's launch-and-compile time (the first `step` included: that is when MJX compiles)
and its physics steps/s, next to the native backend measured in the same run on the same
scene, envs and control. ratio = backend physics steps/s / native physics steps/s.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from mujoco import rollout

from metasim.control.action_kinds.base import native_kind
from metasim.control.actions import ActionController
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.errors import MetasimInputError
from metasim.evaluate.policy_io import policy_context
from metasim.evaluate.records import EpisodeRecord
from metasim.evaluate.timed import timed_loop
from metasim.guards import PROFILE_TEXT, PSTATS, check_out_file
from metasim.policies.base import make_policy
from metasim.scene.compile import CompiledScene
from metasim.scene.sources import compile_task, source_of
from metasim.sim import get_backend
from metasim.sim.base import UnsupportedScene
from metasim.tasks.task import TaskRuntime

# A backend's timed loop stops after this many seconds even if `steps` are not done
# (MJX on a CPU takes seconds per control step at 1,024 envs).
STEP_BUDGET_S = 5.0


def _eval_loop(env: MetasimVectorEnv, steps: int) -> tuple[float, np.ndarray, list[EpisodeRecord]]:
    """Seconds for `steps` control steps of the evaluation loop itself (`run_task`'s
    loop, `timed_loop`: chunk refills, action checks, episode records and restarts), the
    controls it sent (steps, B, nu), and the episodes that finished meanwhile."""
    policy = make_policy("scripted", policy_context(env, "ee_delta"))
    ctrls = np.zeros((steps, env.num_envs, env.compiled.model.nu))

    def on_step(t: int) -> None:
        ctrls[t] = env._ctrl

    run = timed_loop(env, policy, steps, on_step)
    return run.seconds, ctrls, run.records


def _rollout_reference(env: MetasimVectorEnv, ctrls: np.ndarray, nthread: int) -> float:
    """Seconds for raw `mujoco.rollout` to replay `ctrls` from the same initial states."""
    m = env.compiled.model
    sub = env.compiled.substeps
    env.reset(seed=0)
    state0 = env.handler.get_state()
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    init = np.zeros((env.num_envs, mujoco.mj_stateSize(m, spec)))
    data = mujoco.MjData(m)
    for i in range(env.num_envs):
        data.qpos[:] = state0.qpos[i]
        data.qvel[:] = state0.qvel[i]
        data.ctrl[:] = state0.ctrl[i]
        mujoco.mj_getState(m, data, init[i], spec)
    control = np.repeat(np.swapaxes(ctrls, 0, 1), sub, axis=1)  # (B, steps * substeps, nu)
    datas = [mujoco.MjData(m) for _ in range(nthread)]
    with rollout.Rollout(nthread=nthread) as r:
        r.rollout([m] * env.num_envs, datas, init, control[:, :sub])  # warm-up
        t0 = time.perf_counter()
        r.rollout([m] * env.num_envs, datas, init, control)
        return time.perf_counter() - t0


def bench_physics(
    scene: str,
    num_envs: int,
    steps: int = 200,
    threads: int | None = None,
    backend: str = "mujoco",
    repeats: int = 3,
) -> dict[str, Any]:
    """Median over `repeats` interleaved runs of the eval loop and of the reference."""
    compiled = compile_task(scene, "--scene")
    if backend != "mujoco":
        return bench_backend(compiled, num_envs, steps, threads, backend, repeats)
    env = MetasimVectorEnv(
        compiled, num_envs=num_envs, backend=backend, nthread=threads, autoreset=False
    )
    nthread = getattr(env.handler, "nthread", 1)
    _eval_loop(env, min(steps, 10))  # warm-up: thread pool, caches
    loop_times, ref_times = [], []
    for _ in range(repeats):
        loop_s, ctrls, _ = _eval_loop(env, steps)
        loop_times.append(loop_s)
        ref_times.append(_rollout_reference(env, ctrls, nthread))
    env.close()
    loop_s, ref_s = float(np.median(loop_times)), float(np.median(ref_times))
    runs = [r / loop for loop, r in zip(loop_times, ref_times, strict=True)]  # paired ratios
    sub = compiled.substeps
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
        "repeats": repeats,
        "eval_env_steps_per_s": round(env_steps / loop_s, 1),
        "eval_physics_steps_per_s": round(loop_phys, 1),
        "rollout_physics_steps_per_s": round(ref_phys, 1),
        "ratio": round(loop_phys / ref_phys, 3),
        # each interleaved repeat's own ratio (eval loop vs rollout), and their range
        "ratio_runs": [round(r, 3) for r in runs],
        "ratio_spread": [round(min(runs), 3), round(max(runs), 3)],
    }


def handler_rate(
    compiled: CompiledScene,
    backend: str,
    num_envs: int,
    steps: int,
    threads: int | None,
    repeats: int,
) -> dict[str, float]:
    """Launch-and-compile seconds and physics steps/s of raw `handler.step` (median)."""
    t0 = time.perf_counter()
    try:
        handler = get_backend(backend).launch(compiled, num_envs, nthread=threads)
    except UnsupportedScene as exc:
        raise MetasimInputError(f"--backend {backend}", [str(exc)]) from None
    task = TaskRuntime(compiled)
    state = task.sample_initial(handler.default_state(num_envs), list(range(num_envs)))
    # a torque-driven arm runs its controller every substep (LIBERO's osc_pose, holding
    # the pose): the arm then stays up, as in an episode, instead of falling
    controller = ActionController(compiled, native_kind(compiled.robot), num_envs)
    osc, envs = controller.osc, np.arange(num_envs)
    hold = np.zeros((num_envs, controller.dim))

    def start() -> None:
        handler.set_state(state)
        if osc is not None:
            controller.reset(envs, state.qpos, stale=False)

    def step() -> None:
        if osc is not None:
            osc.command(hold)
        handler.step(state.ctrl, osc)

    start()
    step()  # MJX and Warp compile here; native warms its thread pool
    compile_s = time.perf_counter() - t0
    per_step = []
    for _ in range(repeats):
        start()
        n, t = 0, time.perf_counter()
        while n < steps and (n == 0 or time.perf_counter() - t < STEP_BUDGET_S):
            step()
            n += 1
        per_step.append((time.perf_counter() - t) / n)
    handler.close()
    sec = float(np.median(per_step))
    return {
        "launch_and_compile_s": round(compile_s, 2),
        "control_steps_per_s": round(1.0 / sec, 2),
        "physics_steps_per_s": round(num_envs * compiled.substeps / sec, 1),
    }


def bench_backend(
    compiled: CompiledScene,
    num_envs: int,
    steps: int = 200,
    threads: int | None = None,
    backend: str = "mjx",
    repeats: int = 3,
) -> dict[str, Any]:
    """`backend`'s physics steps/s and compile time next to the native backend's."""
    other = handler_rate(compiled, backend, num_envs, steps, threads, repeats)
    native = handler_rate(compiled, "mujoco", num_envs, steps, threads, repeats)
    return {
        "scene": compiled.scene.name,
        "backend": backend,
        "num_envs": num_envs,
        "substeps": compiled.substeps,
        "repeats": repeats,
        backend: other,
        "mujoco": native,
        "ratio": round(other["physics_steps_per_s"] / native["physics_steps_per_s"], 3),
    }


def profile_eval_loop(scene: str, num_envs: int, steps: int, out: Path, top: int = 25) -> str:
    """cProfile of `steps` control steps of the eval loop; writes `out` (pstats) and
    `out` + `.txt` (the `top` entries by own time) and returns that text."""
    compiled = compile_task(scene, "--scene")
    env = MetasimVectorEnv(compiled, num_envs=num_envs, nthread=None, autoreset=False)
    _eval_loop(env, min(steps, 10))
    prof = cProfile.Profile()
    prof.enable()
    _eval_loop(env, steps)
    prof.disable()
    env.close()
    prof.dump_stats(str(out))
    text = io.StringIO()
    stats = pstats.Stats(prof, stream=text)
    stats.sort_stats("tottime").print_stats(top)
    head = f"# {num_envs} envs, {steps} control steps of {compiled.scene.name}\n"
    Path(f"{out}.txt").write_text(head + text.getvalue())
    return head + text.getvalue()


def profile_outputs(profile: str | Path, num_envs: int | None) -> Path:
    """The profile file of `--profile` (suffixed `.N` for one of several env counts), its
    `.txt` beside it: both checked for what they hold before any work."""
    out = Path(profile if num_envs is None else f"{profile}.{num_envs}")
    check_out_file(Path(f"{out}.txt"), "--profile", PROFILE_TEXT)
    return check_out_file(out, "--profile", PSTATS)


def run_physics_bench_cli(args: argparse.Namespace) -> int:
    from metasim.guards import check_budget
    from metasim.sim import BACKENDS
    from metasim.sim.memory import check_env_memory

    if args.backend not in BACKENDS:
        raise MetasimInputError(
            "--backend", [f"unknown backend {args.backend!r}; expected one of {BACKENDS.names()}"]
        )
    if any(n < 1 for n in args.num_envs) or args.steps < 1 or args.repeats < 1:
        raise MetasimInputError("command line", ["--num-envs, --steps and --repeats must be >= 1"])
    check_budget("--num-envs × --steps", max(args.num_envs) * args.steps, "METASIM_MAX_ENV_STEPS")
    if args.backend == "mujoco":  # the most envs asked for fit in memory, before any runs
        most = max(args.num_envs)
        model = compile_task(args.scene, "--scene").model
        check_env_memory(model, most, f"--num-envs {most}", args.scene)
    if args.backend == "mujoco" and not args.profile:
        # the task source's own bench, next to its reference simulator (native stepping);
        # another backend or --profile gets the standard bench of the source's scene
        own = source_of(args.scene).bench(args.scene, args.num_envs, args.steps)
        if own is not None:
            print(json.dumps(own, indent=2))
            return 0
    if args.profile:
        outs = {n: profile_outputs(args.profile, n if len(args.num_envs) > 1 else None)
                for n in args.num_envs}  # fmt: skip
        for n, out in outs.items():
            sys.stderr.write(profile_eval_loop(args.scene, n, args.steps, out))
    results = [
        bench_physics(args.scene, n, args.steps, args.threads, args.backend, args.repeats)
        for n in args.num_envs
    ]
    print(json.dumps(results if len(results) > 1 else results[0], indent=2))
    return 0
