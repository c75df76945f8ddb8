"""Gymnasium registration and Isaac Lab conventions: batched obs groups, autoreset."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import metasim.envs
from tests.conftest import SCENE_FILES


def test_every_scene_is_registered():
    ids = metasim.envs.registered_ids()
    for path in SCENE_FILES:
        assert f"metasim/{path.stem}-v0" in ids


def test_make_vec_and_step():
    env = gym.make_vec("metasim/lift_cube-v0", num_envs=3, vectorization_mode="vector_entry_point")
    obs, info = env.reset(seed=2)
    assert set(obs) == {"policy", "privileged"}
    assert obs["policy"]["joint_pos"].shape == (3, 7)
    assert env.observation_space.contains(obs)
    obs, reward, terminated, truncated, extras = env.step(np.zeros((3, 7)))
    assert reward.shape == (3,) and terminated.dtype == bool
    assert {"success", "progress", "episode_step"} <= set(extras)
    env.close()


def test_same_step_autoreset_on_time_limit(lift_scene):
    env = metasim.envs.MetasimVectorEnv(lift_scene, num_envs=2, seed=0)
    env.reset(seed=0)
    first_seeds = env._seeds.copy()
    still = np.zeros((2, 7))
    still[:, 6] = 1.0
    for _ in range(env.max_episode_steps - 1):
        _, _, term, trunc, extras = env.step(still)
        assert not (term | trunc).any()
    obs, _, term, trunc, extras = env.step(still)
    assert trunc.all() and not term.any()
    assert list(extras["episode"]["env_ids"]) == [0, 1]
    assert (extras["episode"]["length"] == env.max_episode_steps).all()
    assert (env._steps == 0).all() and not np.array_equal(env._seeds, first_seeds)


def test_torch_tensors_on_device(lift_scene):
    torch = pytest.importorskip("torch")
    env = metasim.envs.MetasimVectorEnv(lift_scene, num_envs=2, array_type="torch", device="cpu")
    obs, _ = env.reset(seed=0)
    assert isinstance(obs["policy"]["ee_pos"], torch.Tensor)
    _, reward, *_ = env.step(torch.zeros(2, 7))
    assert isinstance(reward, torch.Tensor)
