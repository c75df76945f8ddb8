"""Perturbation axes on Meta-World scenes: the axes that have something to act on change
the compiled model or the run; the ones with nothing to act on (Meta-World's objects,
table and drawers are parts of the one `metaworld_world` MJCF fixture, not scene
objects or table/drawer fixtures) leave the scene as it is, and LIBERO's background
axis (no MJCF arena) is refused with a clear input error. No reference needed: the scene
is built from the task XML's own configuration (`states=False`)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from metasim.envs.noise import RuntimeNoise
from metasim.errors import MetasimInputError
from metasim.metaworld.importer.scene import scene_dict
from metasim.perturb.grid import Grid, apply_cell, check_grid, expand
from metasim.scene.compile import compile_scene
from metasim.scene.schema import Scene

pytestmark = pytest.mark.reference

TASK = "pick-place-v3"

# Axis -> an off-nominal level that changes something on a Meta-World scene, and what
# it changes in the compiled model (None: not the model, the scene or the run).
APPLIES = {
    "light_intensity": (0.3, "light_diffuse"),
    "light_direction": ([0.5, 0.5, -1.0], "light_dir"),
    "light_color": ("orange", "light_diffuse"),
    "camera_shift": ([0.05, 0.0, 0.02], "cam_pos"),
    "camera_fovy": (15.0, "cam_fovy"),
    "instruction": ("pick up the puck", None),
    "instruction_template": ("please {instruction}", None),
    "robot_init_noise": (0.1, None),
    "control_hz": (40.0, None),
}
RUNTIME = {"state_noise": 0.01, "image_noise": 10.0, "action_noise": 0.2, "action_latency": 3}
# Axes with nothing to act on in a Meta-World scene (its objects and table are part of the
# `metaworld_world` fixture, not scene objects or a table fixture): axis -> level. They
# leave the scene as it is, as on any scene without such parts (a grid mixing scenes, e.g.
# `perturbation=standard` on lift_cube and open_drawer, relies on that).
NOT_APPLYING = {
    "object_x": 0.05,
    "object_y": 0.05,
    "object_yaw_range": 0.5,
    "object_pos_range": 0.03,
    "object_color": "red",
    "object_scale": 1.5,
    "friction": 0.3,
    "mass": 3.0,
    "table_color": "white",
    "drawer_damping": 3.0,
}
# Axis -> level, and the words of the refusal (LIBERO's background axis refuses scenes
# without LIBERO's MJCF arena).
REFUSED = {"background_texture": ("blue", "MJCF arena")}


@pytest.fixture(scope="module")
def scene() -> Scene:
    return Scene.model_validate(scene_dict(TASK, states=False))


def _grid(axis: str, level: object, nominal: object = "__nominal__") -> Grid:
    levels = [nominal, level] if nominal != "__nominal__" else [_nominal(axis), level]
    return Grid.model_validate(
        {"name": "t", "design": "ofat", "factors": [{"name": "f", "axis": axis, "levels": levels}]}
    )


def _nominal(axis: str) -> object:
    nominal = {"instruction_template": "{instruction}", "instruction": "pick place"}
    return nominal.get(axis, "nominal" if axis == "background_texture" else 0)


@pytest.mark.parametrize("axis", sorted(APPLIES))
def test_axis_changes_a_metaworld_scene(scene: Scene, axis: str) -> None:
    level, field = APPLIES[axis]
    grid = _grid(axis, level)
    changed, noise = apply_cell(scene, grid, expand(grid)[1])
    assert changed.model_dump() != scene.model_dump()
    assert noise == RuntimeNoise()
    if field is not None:
        before = getattr(compile_scene(scene).model, field)
        after = getattr(compile_scene(changed).model, field)
        assert not np.allclose(before, after), f"{axis} left {field} as it was"


@pytest.mark.parametrize("axis", sorted(RUNTIME))
def test_runtime_axis_sets_the_run_noise(scene: Scene, axis: str) -> None:
    grid = _grid(axis, RUNTIME[axis])
    changed, noise = apply_cell(scene, grid, expand(grid)[1])
    assert changed.model_dump() == scene.model_dump()
    assert noise != RuntimeNoise()


@pytest.mark.parametrize("axis", sorted(NOT_APPLYING))
def test_axis_with_nothing_to_act_on_changes_nothing(scene: Scene, axis: str) -> None:
    grid = _grid(axis, NOT_APPLYING[axis])
    changed, noise = apply_cell(scene, grid, expand(grid)[1])
    assert changed.model_dump() == scene.model_dump()
    assert noise == RuntimeNoise()


@pytest.mark.parametrize("axis", sorted(REFUSED))
def test_axis_with_nothing_to_act_on_is_refused(scene: Scene, axis: str) -> None:
    level, words = REFUSED[axis]
    with pytest.raises(MetasimInputError) as err:
        check_grid(_grid(axis, level), [scene], "perturbations/mine.yaml")
    text = str(err.value)
    assert "perturbations/mine.yaml" in text and scene.name in text and words in text


def test_lights_and_cameras_are_the_scene_ones(scene: Scene) -> None:
    """Why the light and camera axes apply: the compiled lights and world cameras are the
    scene's (`lights:`, `cameras:`), imported from the package's XML."""
    m = compile_scene(scene).model
    cams = {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(m.ncam)}
    assert {c.name for c in scene.cameras} <= cams
    assert m.nlight >= len(scene.lights) > 0


def test_state_noise_reaches_the_package_observation(scene: Scene) -> None:
    """`state_noise` perturbs the frame the package's observation is built from (hand,
    gripper, object poses: `metaworld_frame`), so it reaches `metaworld_expert` and any
    policy fed the 39-D observation; the goal is not a measured state and stays exact."""
    from metasim.envs.vec_env import MetasimVectorEnv

    compiled = compile_scene(scene)
    got = []
    for noise in (RuntimeNoise(), RuntimeNoise(state_noise=0.01)):
        env = MetasimVectorEnv(compiled, num_envs=2, action_space="mocap_delta", noise=noise)
        try:
            obs, _ = env.reset(seed=0)
            got.append(obs["privileged"])
        finally:
            env.close()
    clean, noisy = got
    gap = np.abs(noisy["metaworld_frame"] - clean["metaworld_frame"])
    assert 0.001 < gap.max() < 0.1
    np.testing.assert_array_equal(noisy["metaworld_goal"], clean["metaworld_goal"])
