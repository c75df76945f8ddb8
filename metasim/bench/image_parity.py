"""Image parity of MuJoCo Warp's ray tracer against MuJoCo's OpenGL renderer.

For each task: one env batch of `states` envs, each reset with its own seed and moved by
`moves` control steps of random actions (a random state); then every camera view is
rendered from those same states by both renderers (`opengl` through the handler,
`warp` through a ray-traced rig of the same handler) and compared: PSNR (dB, peak 255,
over all pixels and channels of the view's frames) and mean absolute error (0-255).
bench/render_parity.py prints the table docs/rendering.md shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from metasim.reference.images import mae, psnr
from metasim.scene.render_schema import RaytraceSpec
from metasim.sim.cameras import View


def random_states(env: Any, seed: int, moves: int) -> None:
    """Reset `env`'s envs (seeds from `seed`) and step `moves` random actions (half the
    action range) so that the arm and the objects are off their reset poses."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    low, high = env.controller.bounds()
    mid, half = (high + low) / 2, (high - low) / 4
    for _ in range(moves):
        env.step(mid + half * rng.uniform(-1, 1, size=(env.num_envs, len(low))))


def task_parity(
    ref: str,
    cameras: Sequence[str],
    size: tuple[int, int] | None,
    settings: RaytraceSpec,
    states: int = 2,
    moves: int = 8,
    seed: int = 0,
    variants: dict[str, RaytraceSpec] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per camera of task `ref`: PSNR and MAE of Warp vs OpenGL over `states` random
    states, at `size` (W, H; None: the scene's camera size), and both images of env 0.
    `variants` (name -> other settings): also per camera `camera@name`, the same states
    ray traced with those settings against the same OpenGL frames."""
    from metasim.envs.vec_env import MetasimVectorEnv
    from metasim.scene.sources import compile_task

    compiled = compile_task(ref)
    env = MetasimVectorEnv(compiled, num_envs=states, autoreset=False)
    try:
        random_states(env, seed, moves)
        views = []
        for cam in cameras:
            w, h = size or compiled.camera_size(cam)
            views.append(View(cam, w, h))
        gl = env.handler.camera_rig(views, "opengl").render()
        runs = {"": env.handler.camera_rig(views, "warp", settings).render()}
        for name, other in (variants or {}).items():
            runs[f"@{name}"] = env.handler.camera_rig(views, "warp", other).render()
    finally:
        env.close()
    return {
        v.camera + key: {"psnr": psnr(a, b), "mae": mae(a, b), "opengl": a[0], "warp": b[0]}
        for key, rt in runs.items()
        for v, a, b in zip(views, gl, rt, strict=True)
    }


__all__ = ["mae", "psnr", "random_states", "task_parity"]
