"""Fixture placement as LIBERO does it: every episode re-places the fixtures (cabinet,
stove, rack...) inside their BDDL regions, drawn from the episode's seed only, so episode
k's poses are the same whatever `num_envs` and slot; LIBERO's range (the reference's
resets land inside it); the parity tools still put the fixtures where the reference's
reset put them."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv, episode_seed
from metasim.libero.checks import parity
from metasim.libero.importer import assets
from metasim.libero.importer.scene import ARENAS, load_task
from metasim.libero.reference.simulator import ReferenceSim
from metasim.scene.compile import CompiledScene, compile_scene
from metasim.tasks.fixture_placement import episode_fixture_poses, sample_fixture_poses

TASK = "libero:libero_goal/8"  # wooden_cabinet_1, flat_stove_1, wine_rack_1


@pytest.fixture(scope="module")
def compiled() -> CompiledScene:
    return compile_scene(load_task(TASK).scene)


def _libero_regions(ref: str) -> dict[str, tuple[np.ndarray, tuple[float, float]]]:
    """Per fixture, straight from the BDDL problem: its placement rectangle in the world
    (x0, y0, x1, y1) and yaw range, as LIBERO's sampler reads them."""
    problem = load_task(ref).problem
    off = ARENAS[problem.problem_name].offset
    fixtures = {inst for inst, _, is_object in assets.models_of(problem) if not is_object}
    out = {}
    for atom in problem.init:
        if atom[0] == "on" and atom[1] in fixtures and atom[2] in problem.regions:
            region = problem.regions[atom[2]]
            assert len(region.ranges) == 1
            (x0, y0, x1, y1) = region.ranges[0]
            rect = np.array([x0 + off[0], y0 + off[1], x1 + off[0], y1 + off[1]])
            out[str(atom[1])] = (rect, region.yaw_rotation)
    return out


def _run_episodes(compiled: CompiledScene, num_envs: int, episodes: int) -> dict[int, np.ndarray]:
    """Episode -> the fixture roots' world positions (n, 3) the handler simulated, with
    episodes fed into `num_envs` slots as the eval loop feeds them (slot 0 twice as often)."""
    env = MetasimVectorEnv(compiled, num_envs=num_envs, action_space="osc_pose", nthread=1)
    try:
        bodies = env.fixture_poses().bodies  # type: ignore[union-attr]
        seen: dict[int, np.ndarray] = {}
        queue = list(range(episodes))
        slots = [0, *range(num_envs)] * episodes
        for slot in slots:
            if not queue:
                break
            k = queue.pop(0)
            env.reset(options={"env_ids": [slot], "seeds": [episode_seed(7, k)], "episodes": [k]})
            seen[k] = env.handler.kinematics().body_pos[slot, bodies].copy()
            np.testing.assert_array_equal(env.fixture_poses().pos[slot], seen[k])  # type: ignore[union-attr]
        return seen
    finally:
        env.close()


def test_episode_poses_depend_only_on_the_episode(compiled: CompiledScene) -> None:
    one = _run_episodes(compiled, 1, 5)
    three = _run_episodes(compiled, 3, 5)
    for k in range(5):
        np.testing.assert_array_equal(one[k], three[k])
        from_seed = episode_fixture_poses(compiled, episode_seed(7, k))
        np.testing.assert_array_equal(np.stack([p for p, _ in from_seed.values()]), one[k])
    assert not np.array_equal(one[0], one[1])  # each episode has its own


def test_poses_span_libero_regions_and_nothing_more(compiled: CompiledScene) -> None:
    """2000 draws: x-y inside each fixture's BDDL rectangle (shifted by the workspace
    offset, LIBERO's reference_pos) and reaching close to all four sides; z and yaw as
    LIBERO's sampler sets them."""
    regions = _libero_regions(TASK)
    poses = sample_fixture_poses(compiled, list(range(2000)))
    assert poses is not None and set(poses.names) == set(regions)
    for j, name in enumerate(poses.names):
        rect, (yaw_lo, yaw_hi) = regions[name]
        xy = poses.pos[:, j, :2]
        assert np.all(xy >= rect[:2]) and np.all(xy <= rect[2:]), name
        width = rect[2:] - rect[:2]
        assert np.all(xy.min(axis=0) - rect[:2] < 0.01 * width), name
        assert np.all(rect[2:] - xy.max(axis=0) < 0.01 * width), name
        nominal = next(f for f in compiled.scene.fixtures if f.name == name)
        np.testing.assert_array_equal(poses.pos[:, j, 2], nominal.pos[2])
        yaw = 2 * np.arctan2(poses.quat[:, j, 3], poses.quat[:, j, 0])
        assert np.all((yaw >= yaw_lo - 1e-12) & (yaw <= yaw_hi + 1e-12)), name


@pytest.mark.reference
@pytest.mark.slow
def test_reference_resets_land_in_metasim_range(ref: ReferenceSim, compiled: CompiledScene) -> None:
    """Over six reference resets (env.seed(0) once, then resets as openpi's loop does),
    LIBERO's fixture displacements from the region centres stay within metasim's sampled
    range and spread over most of it; the height and yaw are metasim's nominal ones."""
    info = ref.load("libero_goal", 8, cameras=False)
    poses = sample_fixture_poses(compiled, list(range(2000)))
    assert poses is not None
    observed = []
    for i in range(6):
        state, _ = ref.reset(init=0, seed=0 if i == 0 else None)
        observed.append(
            [state["body_xpos"][info["bodies"].index(info["fixtures"][n])] for n in poses.names]
        )
    ref_pos = np.array(observed)  # (6, n, 3)
    centre = np.array([f.pos for n in poses.names for f in compiled.scene.fixtures if f.name == n])
    ref_d, ours_d = ref_pos - centre, poses.pos - centre
    half = np.abs(ours_d[..., :2]).max(axis=0)  # metasim's range, per fixture and axis
    print("reference |displacement| max (mm):", 1e3 * np.abs(ref_d[..., :2]).max(axis=0))
    print("metasim range half-widths (mm):", 1e3 * half)
    assert np.all(np.abs(ref_d[..., :2]) <= half + 1e-6)
    assert np.abs(ref_d[..., :2]).max() > 0.5 * half.max()  # LIBERO does move them
    np.testing.assert_allclose(ref_d[..., 2], 0.0, atol=1e-9)
    idx = [info["bodies"].index(info["fixtures"][n]) for n in poses.names]
    got = ref.state()[0]["body_xquat"][idx]  # the last reset's (n, 4), w first
    ref_yaw = 2 * np.arctan2(got[:, 3], got[:, 0])
    ours_yaw = 2 * np.arctan2(poses.quat[..., 3], poses.quat[..., 0])
    assert np.all(ref_yaw >= ours_yaw.min(axis=0) - 1e-9), (ref_yaw, ours_yaw.min(axis=0))
    assert np.all(ref_yaw <= ours_yaw.max(axis=0) + 1e-9), (ref_yaw, ours_yaw.max(axis=0))


@pytest.mark.reference
@pytest.mark.slow
def test_parity_still_syncs_fixtures_to_the_reference(ref: ReferenceSim) -> None:
    """`place_fixtures` puts metasim's fixtures at the reference reset's own poses (not at
    metasim's nominal or sampled ones)."""
    info = ref.load("libero_goal", 8, cameras=False)
    state, _ = ref.reset(init=0, seed=3)
    task = load_task(TASK)
    model = compile_scene(task.scene).model
    nominal = {n: model.body_pos[model.body(n).id].copy() for n in info["fixtures"]}
    parity.place_fixtures(model, info["fixtures"], info["bodies"], state)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    moved = 0.0
    for inst, root in info["fixtures"].items():
        i = info["bodies"].index(root)
        np.testing.assert_allclose(
            data.xpos[model.body(inst).id], state["body_xpos"][i], atol=1e-12
        )
        moved = max(moved, float(np.abs(state["body_xpos"][i] - nominal[inst]).max()))
    assert moved > 1e-4  # the reference's reset did move them off the nominal pose
    assert math.isfinite(moved)
