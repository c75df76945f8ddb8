"""Contract over every scene in scenes/: validates, compiles, resets, steps, no NaN,
observations match the declared spaces. Add a scene and it is tested here for free."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.scene import compile_file
from tests.conftest import SCENE_FILES, scene_ids


def _check_obs(env: MetasimVectorEnv, obs: dict) -> None:
    space = env.observation_space
    for group, terms in obs.items():
        for key, value in terms.items():
            declared = space[group][key]
            assert value.shape == declared.shape, (group, key, value.shape, declared.shape)
            assert value.dtype == declared.dtype, (group, key)
            assert np.all(np.isfinite(value)), (group, key)


def test_there_are_at_least_eight_scenes():
    assert len(SCENE_FILES) >= 8, [p.name for p in SCENE_FILES]


@pytest.mark.parametrize("path", SCENE_FILES, ids=scene_ids())
def test_scene_contract(path):
    compiled = compile_file(str(path))
    assert compiled.model.nbody > 1
    env = MetasimVectorEnv(compiled, num_envs=2)
    obs, _ = env.reset(seed=3)
    _check_obs(env, obs)
    rng = np.random.default_rng(0)
    low, high = env.single_action_space.low, env.single_action_space.high
    for _ in range(100):
        action = rng.uniform(low, high, size=(2, len(low))) * 0.3
        obs, reward, terminated, truncated, extras = env.step(action)
        assert not extras["unstable"].any()
        assert reward.shape == terminated.shape == truncated.shape == (2,)
    _check_obs(env, obs)
    env.close()


@pytest.mark.parametrize("path", SCENE_FILES, ids=scene_ids())
def test_scene_cameras_render_as_declared(path):
    compiled = compile_file(str(path))
    cams = tuple(c.name for c in compiled.scene.cameras)
    env = MetasimVectorEnv(compiled, num_envs=2, cameras=cams)
    obs, _ = env.reset(seed=3)
    _check_obs(env, obs)
    obs, *_ = env.step(np.zeros((2, env.single_action_space.shape[0])))
    _check_obs(env, obs)
    for cam in cams:
        img = obs["policy"][f"{cam}_rgb"]
        assert img.std() > 1.0, f"camera {cam} renders a blank image"
    env.close()
