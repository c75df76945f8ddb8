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


def test_the_env_derives_each_episodes_seed(lift_scene):
    """`reset(options={"episodes": ...})`: episode k's seed is `episode_seed(seed, k)`
    whatever slot it lands in; the same start as giving those seeds; the running count
    when no episode is named; explicit seeds still override."""
    from metasim.tasks.seeds import episode_seed

    env = metasim.envs.MetasimVectorEnv(lift_scene, num_envs=2, seed=7)
    try:
        obs, info = env.reset(options={"env_ids": [1, 0], "episodes": [3, 5]})
        want = [episode_seed(7, 5), episode_seed(7, 3)]
        assert info["seeds"].tolist() == want and env.episode_seeds.tolist() == want
        by_seed, _ = env.reset(options={"env_ids": [1, 0], "seeds": want[::-1]})
        for key, value in obs["privileged"].items():
            np.testing.assert_array_equal(value, by_seed["privileged"][key], err_msg=key)
        _, info = env.reset(seed=9)
        assert info["seeds"].tolist() == [episode_seed(9, 0), episode_seed(9, 1)]
        _, info = env.reset(options={"env_ids": [0]})
        assert info["seeds"].tolist() == [episode_seed(9, 2), episode_seed(9, 1)]
    finally:
        env.close()


def test_the_random_streams_are_fixed():
    """Stored runs were drawn with these streams: the table and its generators never change."""
    from metasim.tasks.seeds import STREAMS, episode_rng

    assert STREAMS == {"initial_state": None, "runtime_noise": 1, "fixture_poses": 2}
    assert episode_rng(5, "initial_state").random() == np.random.default_rng(5).random()
    assert episode_rng(5, "fixture_poses").random() == np.random.default_rng([5, 2]).random()
