"""Settle steps in the env (`metasim.envs.settle`): once switched on, each episode's first
`settle_steps` control steps apply the hold-still, gripper-open action whatever is sent."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.scene.compile import CompiledScene, compile_scene


@pytest.fixture(scope="module")
def settled(lift_scene: CompiledScene) -> CompiledScene:
    s = lift_scene.scene
    task = s.task.model_copy(update={"settle_steps": 2})
    return compile_scene(s.model_copy(update={"task": task}), source=lift_scene.source)


def test_each_episode_starts_with_its_settle_steps(settled: CompiledScene) -> None:
    env = MetasimVectorEnv(settled, num_envs=2, autoreset=False)
    try:
        env.use_settle_steps()
        hold = env.controller.settle_action(2)
        sent = np.full((2, env.controller.dim), 0.5)
        env.reset()
        applied = []
        for t in range(4):
            if t == 2:  # env 1 starts a new episode: its settle steps come first again
                env.reset(options={"env_ids": np.array([1]), "episodes": [5]})
            assert env.settle.settling.tolist() == [t < 2, t < 4]
            env.step(sent)
            applied.append(env.applied_actions.copy())
        assert np.array_equal(applied[0], hold) and np.array_equal(applied[1], hold)
        assert np.array_equal(applied[2], np.stack([sent[0], hold[1]]))
        assert np.array_equal(applied[3], np.stack([sent[0], hold[1]]))
    finally:
        env.close()


def test_without_use_the_env_runs_no_settle_step(settled: CompiledScene) -> None:
    env = MetasimVectorEnv(settled, num_envs=1, autoreset=False)
    try:
        env.reset()
        sent = np.full((1, env.controller.dim), 0.5)
        env.step(sent)
        assert not env.settle.settling.any() and np.array_equal(env.applied_actions, sent)
    finally:
        env.close()
