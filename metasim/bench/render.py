"""`metasim bench render`: observation rendering frames/s next to a bare mujoco.Renderer.

For each scene, camera and size, the metasim observation path renders `frames` images:
a `MetasimVectorEnv` stepped a few control steps, then its handler's
`render(camera, width=, height=)` (per env: state into the env's model and data,
kinematics, `mj_camlight`, `update_scene`, `render`, copy; stacked over envs). The
reference is a bare loop on the same compiled model: one `mujoco.Renderer(model, h, w)`
doing `update_scene(data, camera)` + `render()` on a fresh `MjData` holding env 0's state
after `mj_forward`, the same number of frames. With the default single env both render the
very same state; with `--num-envs N` metasim's frames cycle over N states. Both run
`repeats` times, interleaved call by call (one metasim `render`, then as many bare frames;
who goes first alternates) so both see the same load on a shared machine; each rate is the
median over repeats; ratio = metasim fps / bare fps.

metasim has no depth observation, so depth frames/s (`enable_depth_rendering`) are
reported for the bare loop only, as a separate column.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import mujoco  # metasim/__init__ (imported first, as our package) has set MUJOCO_GL
import numpy as np

from metasim.errors import MetasimInputError
from metasim.guards import NUM_ENVS, REPEATS, STEPS
from metasim.paths import SCENES
from metasim.scene.compile import CompiledScene

DEFAULT_SIZES = ("224x224", "640x480")
SETTLE_STEPS = 5  # control steps before rendering, so the robot and objects have moved


def add_parser(bench_verbs: Any) -> None:
    p = bench_verbs.add_parser("render", help="camera frames/s next to a bare mujoco.Renderer")
    p.add_argument(
        "--scenes",
        nargs="+",
        default=None,
        metavar="SCENE",
        help="built-in scene names (lift_cube) or scene files; default: all built-in scenes",
    )
    p.add_argument(
        "--sizes", nargs="+", default=list(DEFAULT_SIZES), metavar="WxH", help="image sizes"
    )
    p.add_argument("--camera", default=None, help="one camera; default: each scene's cameras")
    p.add_argument(
        "--num-envs",
        type=NUM_ENVS,
        default=1,
        help="envs of the metasim env (with more, its frames show other states than env 0's)",
    )
    p.add_argument("--frames", type=STEPS, default=24, help="frames per measurement")
    p.add_argument("--repeats", type=REPEATS, default=3, help="report the median of this many")
    p.add_argument(
        "--table", action="store_true", help="also print a table (on stderr) when not a TTY"
    )


# ---------------------------------------------------------------- arguments


def parse_size(text: str) -> tuple[int, int]:
    """'640x480' -> (640, 480)."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        raise MetasimInputError("--sizes", [f"expected WxH such as 640x480, got {text!r}"])
    return int(m.group(1)), int(m.group(2))


def builtin_scenes() -> list[Path]:
    return sorted(SCENES.glob("*.yaml"))


def resolve_scene(name: str) -> Path:
    """A built-in scene name (`lift_cube`, `lift_cube.yaml`) or a path to a scene file."""
    for cand in (SCENES / name, SCENES / f"{name}.yaml", Path(name)):
        if cand.is_file():
            return cand
    known = ", ".join(p.stem for p in builtin_scenes())
    raise MetasimInputError(
        "--scenes", [f"unknown scene {name!r}; built-in scenes are {known}, or give a file"]
    )


def scene_cameras(compiled: Any, camera: str | None) -> list[str]:
    """The cameras to measure: `camera` if given (it must exist), else the scene's own."""
    model = compiled.model
    names = [model.camera(i).name for i in range(model.ncam)]
    if camera is not None:
        if camera not in names:
            raise MetasimInputError(
                "--camera",
                [f"scene {compiled.scene.name!r} has no camera {camera!r}; it has {names}"],
            )
        return [camera]
    cams = [c.name for c in compiled.scene.cameras] or names
    if not cams:
        raise MetasimInputError("--scenes", [f"scene {compiled.scene.name!r} has no camera"])
    return cams


# ---------------------------------------------------------------- measurement


def _gl_renderer() -> str | None:
    """The GL_RENDERER string of the current context (e.g. 'llvmpipe (LLVM ...)')."""
    try:
        from OpenGL import GL

        name = GL.glGetString(GL.GL_RENDERER)
        return name.decode() if isinstance(name, bytes) else None
    except Exception:
        return None


def _timed(fn: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_scene(
    scene: str | Path | CompiledScene,
    sizes: Sequence[tuple[int, int]],
    cameras: Sequence[str] | None = None,
    num_envs: int = 1,
    frames: int = 24,
    repeats: int = 3,
    info: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One row per (camera, size): metasim and bare fps (medians), ratio, bare depth fps.

    `info`, if given, receives the GL renderer name."""
    from metasim.envs.vec_env import MetasimVectorEnv, as_compiled

    compiled = as_compiled(scene)
    cams = list(cameras) if cameras else scene_cameras(compiled, None)
    env = MetasimVectorEnv(compiled, num_envs=num_envs)
    env.reset(seed=0)
    hold = np.zeros((num_envs, env.controller.dim))
    for _ in range(SETTLE_STEPS):
        env.step(hold)
    handler = env.handler
    model = compiled.model
    data = mujoco.MjData(model)
    state = handler.get_state()
    data.qpos[:] = state.qpos[0]
    data.qvel[:] = state.qvel[0]
    data.ctrl[:] = state.ctrl[0]
    mujoco.mj_forward(model, data)

    calls = -(-frames // num_envs)  # handler.render renders num_envs frames per call
    rows: list[dict[str, Any]] = []
    try:
        for w, h in sizes:
            bare = mujoco.Renderer(model, height=h, width=w)
            try:
                for cam in cams:
                    row = _measure(handler, bare, data, cam, w, h, calls, repeats, info)
                    rows.append({"scene": compiled.scene.name, **row})
            finally:
                bare.close()
    finally:
        env.close()
    return rows


def _measure(
    handler: Any,
    bare: mujoco.Renderer,
    data: mujoco.MjData,
    cam: str,
    w: int,
    h: int,
    calls: int,
    repeats: int,
    info: dict[str, Any] | None,
) -> dict[str, Any]:
    """fps of `calls` metasim renders (num_envs frames each) and of as many bare frames."""
    n_frames = calls * handler.num_envs
    cam_id = handler.model.camera(cam).id

    def metasim_call() -> None:
        handler.render(cam, width=w, height=h)

    def bare_call() -> None:  # as many frames as one metasim call
        for _ in range(handler.num_envs):
            bare.update_scene(data, camera=cam_id)
            bare.render()

    def depth_loop() -> None:
        bare.enable_depth_rendering()
        try:
            for _ in range(calls):
                bare_call()
        finally:
            bare.disable_depth_rendering()

    # Warm-up: GL contexts, shadow maps, caches (and the handler's renderer for this size).
    metasim_call()
    bare_call()
    if info is not None and "gl_renderer" not in info:
        info["gl_renderer"] = _gl_renderer()
    depth_loop()

    # Interleaved call by call (who goes first alternates), so that both paths see the same
    # machine load: on a shared machine the ratio holds even when the rates drift.
    seconds: dict[str, list[float]] = {"metasim": [], "bare": [], "bare_depth": []}
    for rep in range(repeats):
        t_metasim = t_bare = 0.0
        for k in range(calls):
            if (rep + k) % 2 == 0:
                t_metasim += _timed(metasim_call)
                t_bare += _timed(bare_call)
            else:
                t_bare += _timed(bare_call)
                t_metasim += _timed(metasim_call)
        seconds["metasim"].append(t_metasim)
        seconds["bare"].append(t_bare)
        seconds["bare_depth"].append(_timed(depth_loop))
    fps = {k: n_frames / float(np.median(v)) for k, v in seconds.items()}
    return {
        "camera": cam,
        "width": w,
        "height": h,
        "frames": n_frames,
        "metasim_fps": round(fps["metasim"], 2),
        "bare_fps": round(fps["bare"], 2),
        "ratio": round(fps["metasim"] / fps["bare"], 3),
        "bare_depth_fps": round(fps["bare_depth"], 2),
    }


def bench_render(
    scenes: Sequence[str | Path] | None = None,
    sizes: Sequence[str] = DEFAULT_SIZES,
    camera: str | None = None,
    num_envs: int = 1,
    frames: int = 24,
    repeats: int = 3,
) -> dict[str, Any]:
    """Check every argument first (MetasimInputError), then measure every scene."""
    from metasim.scene import compile_file

    if num_envs < 1 or frames < 1 or repeats < 1:
        raise MetasimInputError("command line", ["--num-envs, --frames and --repeats must be >= 1"])
    dims = [parse_size(s) for s in sizes]
    if not dims:
        raise MetasimInputError("--sizes", ["give at least one size such as 224x224"])
    paths = [resolve_scene(str(s)) for s in scenes] if scenes else builtin_scenes()
    plan = []
    for path in paths:
        compiled = compile_file(str(path))
        vis = compiled.model.vis.global_
        for w, h in dims:
            if w > vis.offwidth or h > vis.offheight:
                raise MetasimInputError(
                    "--sizes",
                    [
                        f"{w}x{h} is larger than scene {compiled.scene.name!r}'s offscreen "
                        f"buffer ({vis.offwidth}x{vis.offheight})"
                    ],
                    "Declare a camera of that size in the scene to enlarge it",
                )
        plan.append((compiled, scene_cameras(compiled, camera)))
    info: dict[str, Any] = {}
    rows = []
    for compiled, cams in plan:
        rows += bench_scene(compiled, dims, cams, num_envs, frames, repeats, info)
    return {
        "mujoco": mujoco.__version__,
        "mujoco_gl": os.environ.get("MUJOCO_GL"),
        "gl_renderer": info.get("gl_renderer"),
        "num_envs": num_envs,
        "repeats": repeats,
        "results": rows,
    }


# ---------------------------------------------------------------- output


def print_table(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    title = (
        f"render frames/s, MuJoCo {result['mujoco']}, {result['mujoco_gl']}"
        f" ({result['gl_renderer'] or 'unknown GL'}), {result['num_envs']} envs,"
        f" median of {result['repeats']}"
    )
    table = Table(title=title)
    for col in ("scene", "camera", "size", "metasim fps", "bare fps", "ratio", "bare depth fps"):
        left = col in ("scene", "camera")
        table.add_column(col, justify="left" if left else "right", no_wrap=left)
    for r in result["results"]:
        table.add_row(
            r["scene"],
            r["camera"],
            f"{r['width']}x{r['height']}",
            f"{r['metasim_fps']:.1f}",
            f"{r['bare_fps']:.1f}",
            f"{r['ratio']:.2f}",
            f"{r['bare_depth_fps']:.1f}",
        )
    Console(stderr=True).print(table)


def run_render_bench_cli(args: argparse.Namespace) -> int:
    result = bench_render(
        args.scenes, args.sizes, args.camera, args.num_envs, args.frames, args.repeats
    )
    print(json.dumps(result, indent=2))
    sys.stdout.flush()
    if args.table or sys.stdout.isatty():
        print_table(result)
    return 0
