"""LIBERO-Plus's seven factors on a LIBERO scene (libero_spatial task 0): each changes
what it should (frames for camera, light and background; joint and object positions for
robot init and layout; pixels for sensor noise) and the nominal cell is the scene as
imported."""

from __future__ import annotations

import functools

import mujoco
import numpy as np
import pytest

from metasim.envs.noise import RuntimeNoise
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.errors import MetasimInputError
from metasim.libero.importer.scene import LiberoTask, load_task
from metasim.perturb import Grid, apply_cell, expand, load_grid
from metasim.scene.compile import CompiledScene, compile_scene
from metasim.scene.schema import Scene
from metasim.sim import get_backend
from metasim.sim.base import SimState
from metasim.tasks.task import TaskRuntime

REF = "libero:libero_spatial/0"


@functools.cache
def _task() -> LiberoTask:
    return load_task(REF)


def _one(axis: str, value: object, target: str | None = None) -> Scene:
    grid = Grid.model_validate(
        {"name": "t", "factors": [{"name": "f", "axis": axis, "target": target,
                                   "levels": ["__nominal__", value]}]}
    )  # fmt: skip
    scene, noise = apply_cell(_task().scene, grid, expand(grid)[1])
    assert noise == RuntimeNoise()
    return scene


def _frame(compiled: CompiledScene, init: int = 0) -> np.ndarray:
    """(256, 256, 3) uint8 agentview of init state `init`."""
    model = compiled.model
    data = mujoco.MjData(model)
    state = TaskRuntime(compiled).sample_initial(_state(compiled, 1), [0], [init])
    data.qpos[:] = state.qpos[0]
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, 256, 256) as r:
        r.update_scene(data, camera="agentview")
        return r.render().astype(np.float64)


def _state(compiled: CompiledScene, n: int) -> SimState:
    return get_backend("mujoco").launch(compiled, n).default_state(n)


@functools.cache
def _nominal() -> tuple[CompiledScene, np.ndarray]:
    compiled = compile_scene(_task().scene)
    return compiled, _frame(compiled)


def test_nominal_cell_is_the_imported_scene() -> None:
    grid = load_grid("libero_plus")
    cells = expand(grid)
    assert len(cells) == 15 and cells[0].is_nominal
    scene, noise = apply_cell(_task().scene, grid, cells[0])
    assert scene.model_dump() == _task().scene.model_dump()
    assert noise == RuntimeNoise()
    # Every off-nominal cell changes the scene or the runtime noise.
    for cell in cells[1:]:
        s, n = apply_cell(_task().scene, grid, cell)
        assert s.model_dump() != _task().scene.model_dump() or n != RuntimeNoise(), cell


@pytest.mark.slow
def test_lights_are_the_arena_s_and_the_light_axis_reaches_them() -> None:
    compiled, frame = _nominal()
    names = [compiled.model.light(i).name for i in range(compiled.model.nlight)]
    assert names == ["arena/light1", "arena/light2"]  # LIBERO's, no extra light
    dim = compile_scene(_one("light_intensity", 0.35))
    np.testing.assert_allclose(dim.model.light_diffuse, 0.35 * compiled.model.light_diffuse)
    assert _frame(dim).mean() < frame.mean() - 10


@pytest.mark.parametrize("theme", ["blue", "dark"])
def test_background_texture_changes_walls_and_floor(theme: str) -> None:
    _, frame = _nominal()
    swapped = compile_scene(_one("background_texture", theme))
    diff = np.abs(_frame(swapped) - frame).max(axis=-1)
    assert (diff > 30).mean() > 0.05  # the visible floor/walls changed, not a few pixels


def test_background_texture_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="theme"):
        _one("background_texture", "plaid")
    with pytest.raises(MetasimInputError, match="no texture 'tex-sky'"):
        compile_scene(_one("background_texture", {"tex-sky": "../textures/gray_floor.png"}))


def test_camera_shift_moves_agentview() -> None:
    compiled, frame = _nominal()
    moved = compile_scene(_one("camera_shift", [0.0, 0.15, 0.0], "agentview"))
    cam = moved.model.camera("agentview").id
    np.testing.assert_allclose(
        moved.model.cam_pos[cam] - compiled.model.cam_pos[cam], [0.0, 0.15, 0.0], atol=1e-9
    )
    assert np.abs(_frame(moved) - frame).mean() > 5


def test_robot_init_noise_is_added_to_the_recorded_arm_per_episode() -> None:
    nominal = compile_scene(_task().scene)
    noisy = compile_scene(_one("robot_init_noise", 0.1))
    seeds, episodes = [11, 12, 11], [3, 3, 3]
    base = TaskRuntime(nominal).sample_initial(_state(nominal, 3), seeds, episodes)
    runtime = TaskRuntime(noisy)
    a = runtime.sample_initial(_state(noisy, 3), seeds, episodes)
    b = runtime.sample_initial(_state(noisy, 3), seeds, episodes)
    arm = nominal.index.arm_qpos
    d = a.qpos[:, arm] - base.qpos[:, arm]
    assert np.abs(d).max() <= 0.1 + 1e-12 and np.abs(d).min() > 0  # ±0.1 rad on every joint
    np.testing.assert_array_equal(a.qpos, b.qpos)  # seeded
    np.testing.assert_array_equal(a.qpos[0], a.qpos[2])  # by seed, not by slot
    assert not np.allclose(a.qpos[0], a.qpos[1])
    rest = np.setdiff1d(np.arange(nominal.model.nq), arm)
    np.testing.assert_array_equal(a.qpos[:, rest], base.qpos[:, rest])  # objects untouched
    # The nominal scene starts from the recorded row exactly.
    rec = TaskRuntime(nominal).init_states
    assert rec is not None
    nq = len(rec.qpos_index)
    np.testing.assert_array_equal(base.qpos[0, rec.qpos_index], rec.rows[3, 1 : 1 + nq])


def test_object_layout_offsets_the_recorded_positions() -> None:
    nominal = compile_scene(_task().scene)
    moved = compile_scene(_one("object_pos_range", 0.05))
    seeds, episodes = [1, 2], [0, 0]
    base = TaskRuntime(nominal).sample_initial(_state(nominal, 2), seeds, episodes)
    a = TaskRuntime(moved).sample_initial(_state(moved, 2), seeds, episodes)
    adrs = [int(x) for x in nominal.index.object_qpos if x >= 0]
    assert len(adrs) == len(_task().scene.objects) >= 5
    for adr in adrs:
        dxy = a.qpos[:, adr : adr + 2] - base.qpos[:, adr : adr + 2]
        assert np.abs(dxy).max() <= 0.05 + 1e-12 and np.abs(dxy).min() > 0
        np.testing.assert_array_equal(a.qpos[:, adr + 2], base.qpos[:, adr + 2])  # same height
        np.testing.assert_array_equal(a.qpos[:, adr + 3 : adr + 7], base.qpos[:, adr + 3 : adr + 7])
    assert not np.allclose(a.qpos[0], a.qpos[1])  # each episode its own layout
    arm = nominal.index.arm_qpos
    np.testing.assert_array_equal(a.qpos[:, arm], base.qpos[:, arm])


def test_object_shift_moves_the_recorded_positions() -> None:
    """object_x / object_y on a task with recorded init states: the recorded pose moved by
    the level, exactly, every episode (not the nominal pose, which the recorded state
    replaces); with object_pos_range in the same cell the range is centred on the shift."""
    nominal = compile_scene(_task().scene)
    seeds, episodes = [1, 2, 3], [0, 7, 33]
    base = TaskRuntime(nominal).sample_initial(_state(nominal, 3), seeds, episodes)
    names = [o.name for o in _task().scene.objects]
    target = names[1]
    adr = int(nominal.index.object_qpos[1])
    for axis, col in (("object_x", 0), ("object_y", 1)):
        moved = compile_scene(_one(axis, 0.04, target))
        a = TaskRuntime(moved).sample_initial(_state(moved, 3), seeds, episodes)
        shift = np.zeros_like(a.qpos)
        shift[:, adr + col] = 0.04
        np.testing.assert_allclose(a.qpos, base.qpos + shift, atol=1e-12, rtol=0)
    grid = Grid.model_validate(
        {"name": "t", "design": "factorial", "factors": [
            {"name": "x", "axis": "object_x", "target": target, "levels": [0.0, 0.1]},
            {"name": "r", "axis": "object_pos_range", "target": target, "levels": [0.0, 0.01]},
        ]}
    )  # fmt: skip
    cell = next(c for c in expand(grid) if c.values == {"x": 0.1, "r": 0.01})
    both = compile_scene(apply_cell(_task().scene, grid, cell)[0])
    b = TaskRuntime(both).sample_initial(_state(both, 3), seeds, episodes)
    dx = b.qpos[:, adr] - base.qpos[:, adr]
    assert np.all(np.abs(dx - 0.1) <= 0.01 + 1e-12) and np.ptp(dx) > 0


@pytest.mark.slow
def test_sensor_noise_reaches_the_camera_observation() -> None:
    compiled, _ = _nominal()
    frames = []
    for noise in (RuntimeNoise(), RuntimeNoise(image_noise=10.0)):
        env = MetasimVectorEnv(
            compiled, num_envs=1, action_space="osc_pose", cameras=["agentview"], noise=noise
        )
        obs, _ = env.reset(options={"env_ids": [0], "seeds": [4], "episodes": [0]})
        frames.append(np.asarray(obs["policy"]["agentview_rgb"], dtype=np.float64))
        env.close()
    d = frames[1] - frames[0]
    assert 6.0 < d.std() < 11.0  # Gaussian std 10, clipped at 0 and 255
