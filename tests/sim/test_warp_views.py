"""Camera poses, fields of view and lights per world: a batch compiled from one scene,
each world given another scene's camera and light rows (`metasim.perturb.views`) as
per-env model edits, draws each world exactly as that scene's own model draws it, on
the warp rig (native and warp physics; the field of view through per-world ray sets)
and on OpenGL (each env's model, on either backend). Warp's CPU device."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

from metasim.envs.vec_env import CameraView, MetasimVectorEnv
from metasim.perturb.axes import SCENE_AXES
from metasim.perturb.views import row_index, view_data, view_rows
from metasim.scene import compile_scene, load_scene
from metasim.scene.compile import CompiledScene
from metasim.scene.schema import Scene
from metasim.sim import ModelEdit

pytestmark = pytest.mark.slow

LIFT = Path(__file__).parents[2] / "scenes" / "lift_cube.yaml"
VIEWS = [CameraView("front", 48, 40), CameraView("wrist", 24, 24, depth=True)]


def _cell(scene: Scene) -> Scene:
    """Every camera and light axis at an off-nominal level."""
    for axis, value in [
        ("camera_shift", [0.05, 0.1, 0.03]),
        ("camera_look_shift", 0.04),
        ("camera_fovy", 12.0),
        ("light_intensity", 0.5),
        ("light_direction", [0.3, 0.2, -1.0]),
        ("light_color", "orange"),
    ]:
        scene = SCENE_AXES[axis](scene, value, None)
    return scene


def _images(env: MetasimVectorEnv, steps: int = 2) -> dict[str, np.ndarray]:
    env.reset(options={"episodes": [0] * env.num_envs})
    hold = np.tile(np.linspace(-0.4, 0.4, env.controller.dim), (env.num_envs, 1))
    for _ in range(steps):
        env.step(hold)
    obs = env.observe()["policy"]
    return {k: np.asarray(v) for k, v in obs.items() if k.endswith(("_rgb", "_depth"))}


def _alone(compiled: CompiledScene, backend: str, render: str) -> dict[str, np.ndarray]:
    env = MetasimVectorEnv(compiled, backend=backend, cameras=VIEWS, render=render, autoreset=False)
    try:
        return _images(env)
    finally:
        env.close()


@pytest.mark.parametrize(
    ("backend", "render"),
    [("mujoco", "warp"), ("warp", "warp"), ("mujoco", "opengl"), ("warp", "opengl")],
)
def test_each_world_draws_its_scenes_cameras_and_lights(backend: str, render: str) -> None:
    base = load_scene(LIFT).model_copy(deep=True)
    base = SCENE_AXES["light_intensity"](base, 1.0, None)  # the grid's nominal level
    cell = _cell(base)
    models = [compile_scene(s, source=LIFT) for s in (base, cell)]
    alone = [_alone(m, backend, render) for m in models]
    assert all(not np.array_equal(alone[0][k], alone[1][k]) for k in alone[0] if "front" in k)
    worlds = [1, 0, 1]  # each world's scene
    env = MetasimVectorEnv(models[0], num_envs=3, backend=backend, cameras=VIEWS, render=render,
                           autoreset=False)  # fmt: skip
    try:
        rows = [view_rows(view_data(s)) for s in (base, cell)]
        for key in rows[0]:
            index = row_index(env.handler.model, key)
            np.testing.assert_array_equal(rows[0][key], getattr(models[0].model, key[0])[index])
            values = np.stack([rows[s][key] for s in worlds])
            env.handler.apply(ModelEdit(key[0], index, values))
        got = _images(env)
        for w, s in enumerate(worlds):
            for k in got:
                np.testing.assert_array_equal(got[k][w], alone[s][k][0], err_msg=f"{k} world {w}")
    finally:
        env.close()


def test_the_cells_model_differs_only_in_rows_or_tracking_references() -> None:
    """The rows are the cell's compiled model's; every other field it differs in is a
    tracking reference no fixed camera or light reads."""
    base = SCENE_AXES["light_intensity"](load_scene(LIFT), 1.0, None)
    a, b = (compile_scene(s, source=LIFT).model for s in (base, _cell(base)))
    rows = view_rows(view_data(_cell(base)))
    for key, row in rows.items():
        np.testing.assert_array_equal(getattr(b, key[0])[row_index(b, key)], row)
    fields = {k[0] for k in rows}
    tracking = {"cam_pos0", "cam_mat0", "cam_poscom0", "light_pos0", "light_dir0", "light_poscom0"}
    differ = {n for n in dir(a) if isinstance(getattr(a, n), np.ndarray) and not n.startswith("_")
              and not np.array_equal(getattr(a, n), getattr(b, n))}  # fmt: skip
    assert differ - fields <= tracking and {"cam_fovy", "cam_pos", "light_diffuse"} <= differ
    fixed = 0  # mjCAMLIGHT_FIXED
    assert (a.cam_mode[[row_index(a, k) for k in rows if k[0] == "cam_pos"]] == fixed).all()
    assert (a.light_mode == fixed).all()
