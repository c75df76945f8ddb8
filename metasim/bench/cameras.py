"""`metasim bench cameras`: observation frames/s of a batched env with several cameras.

The metasim side is the observation itself: a `MetasimVectorEnv(scene, num_envs=N,
cameras=[...])` (reset, then stepped a few control steps) builds its observation
(`_observe`, what `reset` and `step` return: every camera of every env rendered at the
scene's camera sizes, copied into (N, H, W, 3) arrays, plus the state entries). The
reference is a bare loop in the same run: one `mujoco.Renderer` per camera size and, for
each of the N env states (held in N `MjData` after `mj_forward`), `update_scene` +
`render` per camera: the same N x cameras frames. Interleaved call by call, `repeats`
times; rates are medians; ratio = metasim frames/s / bare frames/s. With `--render warp`
the env's cameras are MuJoCo Warp's ray tracer (all frames of the batch in one launch),
so the ratio is Warp's frames/s over OpenGL's on the same states.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import mujoco
import numpy as np

from metasim.bench.render import SETTLE_STEPS, _gl_renderer, resolve_scene, scene_cameras
from metasim.errors import MetasimInputError
from metasim.guards import NUM_ENVS, PIXELS, REPEATS, bounded_int


def add_parser(bench_verbs: Any) -> None:
    p = bench_verbs.add_parser("cameras", help="observation frames/s, N envs x cameras")
    p.add_argument(
        "--scene", default="lift_cube", help="a built-in scene name, a file or a PREFIX:REF task"
    )
    p.add_argument("--cameras", nargs="+", default=None, help="default: the scene's cameras")
    p.add_argument("--num-envs", type=NUM_ENVS, default=64)
    p.add_argument("--repeats", type=REPEATS, default=3, help="report the median of this many")
    p.add_argument(
        "--render",
        choices=["opengl", "warp"],
        default="opengl",
        help="the env's camera renderer (the bare reference loop is always OpenGL)",
    )
    p.add_argument("--size", type=PIXELS, nargs=2, default=None, metavar=("W", "H"))
    p.add_argument(
        "--spp", type=bounded_int(1, 4), default=None, help="warp: samples per pixel per axis"
    )


def _bare_states(env: Any) -> list[mujoco.MjData]:
    """One MjData per env holding that env's state, kinematics computed."""
    model = env.compiled.model
    state = env.handler.get_state()
    datas = []
    for i in range(env.num_envs):
        d = mujoco.MjData(model)
        d.qpos[:] = state.qpos[i]
        d.qvel[:] = state.qvel[i]
        d.ctrl[:] = state.ctrl[i]
        mujoco.mj_forward(model, d)
        datas.append(d)
    return datas


def _compile(scene: str) -> Any:
    """A built-in scene name, a scene file, or a task reference (PREFIX:REF)."""
    from metasim.scene import compile_file
    from metasim.scene.sources import compile_task

    if ":" in scene:
        return compile_task(scene, "--scene")
    return compile_file(str(resolve_scene(scene)))


def bench_cameras(
    scene: str,
    num_envs: int = 64,
    cameras: list[str] | None = None,
    repeats: int = 3,
    render: str = "opengl",
    size: tuple[int, int] | None = None,
    spp: int | None = None,
) -> dict[str, Any]:
    """Observation frames/s of `num_envs` envs x cameras (rendered by `render`, at `size`
    or each camera's size) next to a bare OpenGL Renderer loop over the same frames."""
    from metasim.envs.vec_env import CameraView, MetasimVectorEnv
    from metasim.sim.cameras import check_renderer

    if num_envs < 1 or repeats < 1:
        raise MetasimInputError("command line", ["--num-envs and --repeats must be >= 1"])
    try:
        check_renderer(render)
    except KeyError as exc:
        raise MetasimInputError("--render", [str(exc.args[0])]) from None
    compiled = _compile(scene)
    picks: list[str | None] = list(cameras) if cameras else [None]
    cams = [c for name in picks for c in scene_cameras(compiled, name)]
    w, h = size if size else (None, None)
    views = [CameraView(c, w, h) for c in cams]
    env = MetasimVectorEnv(
        compiled, num_envs=num_envs, cameras=views, render=render, render_spp=spp
    )
    env.reset(seed=0)
    hold = np.zeros((num_envs, env.controller.dim))
    for _ in range(SETTLE_STEPS):
        env.step(hold)
    model = compiled.model
    datas = _bare_states(env)
    sizes = {c: tuple(size) if size else compiled.camera_size(c) for c in cams}
    renderers = {wh: mujoco.Renderer(model, height=wh[1], width=wh[0]) for wh in sizes.values()}
    cam_ids = {c: model.camera(c).id for c in cams}

    def metasim_call() -> None:
        env.observe()

    def bare_call() -> None:
        for d in datas:
            for c in cams:
                r = renderers[sizes[c]]
                r.update_scene(d, camera=cam_ids[c])
                r.render()

    try:
        metasim_call()  # warm-up: GL contexts, shadow maps, the handler's renderers
        bare_call()
        gl = _gl_renderer()
        t_m: list[float] = []
        t_b: list[float] = []
        for rep in range(repeats):
            order = (metasim_call, bare_call) if rep % 2 == 0 else (bare_call, metasim_call)
            for fn in order:
                t0 = time.perf_counter()
                fn()
                (t_m if fn is metasim_call else t_b).append(time.perf_counter() - t0)
    finally:
        for r in renderers.values():
            r.close()
        env.close()
    raytrace = env.raytrace
    frames = num_envs * len(cams)
    metasim_fps = frames / float(np.median(t_m))
    bare_fps = frames / float(np.median(t_b))
    return {
        "scene": compiled.scene.name,
        "num_envs": num_envs,
        "cameras": {c: f"{w}x{h}" for c, (w, h) in sizes.items()},
        "frames_per_observation": frames,
        "repeats": repeats,
        "mujoco": mujoco.__version__,
        "mujoco_gl": os.environ.get("MUJOCO_GL"),
        "render": render,
        "raytrace": raytrace.model_dump() if render == "warp" else None,
        "gl_renderer": gl,
        "metasim_fps": round(metasim_fps, 2),
        "bare_fps": round(bare_fps, 2),
        "ratio": round(metasim_fps / bare_fps, 3),
    }


def run_cameras_bench_cli(args: argparse.Namespace) -> int:
    size = tuple(args.size) if args.size else None
    result = bench_cameras(
        args.scene, args.num_envs, args.cameras, args.repeats, args.render, size, args.spp
    )
    print(json.dumps(result, indent=2))
    return 0
