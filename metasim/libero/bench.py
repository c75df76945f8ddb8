"""`metasim bench physics --scene libero:<suite>/<task>`: metasim's evaluation loop on a
LIBERO task next to the reference simulator (robosuite 1.4 + LIBERO on MuJoCo 3.17, one
env per process as LeRobot and openpi run it), measured in the same run.

Both sides step smooth random `osc_pose` actions from init state 0, state-only and with
the two 256² cameras (`agentview`, `robot0_eye_in_hand`) rendered every step; metasim's
side is `run_task`'s loop itself (settle steps, chunk execution, success checks with
contacts, the OSC torques recomputed every 2 ms substep).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metasim.envs.vec_env import CameraView, MetasimVectorEnv
from metasim.evaluate.timed import timed_loop
from metasim.policies.base import PolicyContext
from metasim.scene import compile_scene

CAMERAS = ("agentview", "robot0_eye_in_hand")


class RandomOsc:
    """Smooth random osc_pose inputs (a low-pass filtered Gaussian), one per step."""

    views: tuple[CameraView, ...] = ()
    action_space = "osc_pose"

    def __init__(self, ctx: PolicyContext) -> None:
        self.rng = np.random.default_rng(0)
        self.last: np.ndarray = np.zeros((ctx.num_envs, 7))

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None:
        """Keeps going: the bench measures speed, not episodes."""

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        self.last = np.clip(0.8 * self.last + 0.3 * self.rng.normal(size=self.last.shape), -1, 1)
        return self.last[:, None].copy()

    def close(self) -> None:
        """Nothing to release."""


def metasim_rate(ref: str, num_envs: int, steps: int, size: int, cameras: bool) -> float:
    """Env-steps/s of metasim's evaluation loop on LIBERO task `ref` (median-free: one
    timed run of `steps` control steps after a short warm-up)."""
    from metasim.libero.importer.scene import load_task

    compiled = compile_scene(load_task(ref).scene)
    views = [CameraView(c, size, size) for c in CAMERAS] if cameras else []
    env = MetasimVectorEnv(
        compiled, num_envs=num_envs, action_space="osc_pose", cameras=views, autoreset=False
    )
    try:
        ctx = PolicyContext.of(compiled, num_envs, "osc_pose")
        policy = RandomOsc(ctx)
        timed_loop(env, policy, 3)  # warm-up
        seconds = timed_loop(env, policy, steps).seconds
    finally:
        env.close()
    return steps * num_envs / seconds


def bench_libero(
    ref: str, num_envs: list[int], steps: int = 50, size: int = 256, reference: bool = True
) -> dict[str, Any]:
    """metasim's env-steps/s on LIBERO task `ref` (state-only and with the two cameras,
    at each env count) and, with `reference`, the reference loop's, plus the ratios."""
    from metasim.libero.importer.scene import parse_ref
    from metasim.libero.reference.simulator import reference_rates

    suite, task = parse_ref(ref)
    out: dict[str, Any] = {"scene": ref, "steps": steps, "camera_size": size, "metasim": {}}
    for n in num_envs:
        out["metasim"][str(n)] = {
            mode: round(metasim_rate(ref, n, steps, size, mode == "cameras"), 2)
            for mode in ("state", "cameras")
        }
    if reference:
        if not isinstance(task, int):
            from metasim.libero.importer import paths

            task = paths.suite_tasks(suite).index(paths.task_name(suite, task))
        rates = reference_rates(suite, task, 0, steps, size)
        out["reference"] = {m: rates[m]["env_steps_per_s"] for m in ("state", "cameras")}
        out["reference_load_s"] = {m: rates[m]["load_s"] for m in ("state", "cameras")}
        out["ratio"] = {
            n: {m: round(v[m] / out["reference"][m], 2) for m in ("state", "cameras")}
            for n, v in out["metasim"].items()
        }
    return out
