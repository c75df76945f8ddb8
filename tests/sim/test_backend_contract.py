"""Contract over every backend in BACKENDS: the env's observations match its declared
spaces, a state round-trips, and the evaluation loop drives the scripted expert to
success. MJX compiles lift_cube with 2 envs (the module-wide scene of
test_mjx_handler.py, so JAX's persistent cache serves both); under the `slow` marker."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.sim import BACKENDS

SLOW = {"mjx", "warp"}  # a cold compile of the scene (XLA) or of the kernels (LLVM)


def _available(name: str) -> Any:
    if name == "mjx":
        pytest.importorskip("jax", reason="the mjx extra (jax, mujoco-mjx) is not installed")
    return name


def _params() -> list[Any]:
    return [
        pytest.param(b, marks=[pytest.mark.slow] if b in SLOW else [], id=b)
        for b in BACKENDS.names()
    ]


def _check_obs(env: MetasimVectorEnv, obs: dict[str, Any]) -> None:
    for group, terms in obs.items():
        for key, value in terms.items():
            declared = env.observation_space[group][key]
            assert value.shape == declared.shape, (group, key)
            assert value.dtype == declared.dtype, (group, key)
            assert np.all(np.isfinite(value)), (group, key)


@pytest.mark.parametrize("backend", _params())
def test_backend_env_contract(backend: str, lift_scene: Any) -> None:
    env = MetasimVectorEnv(lift_scene, num_envs=2, backend=_available(backend))
    obs, _ = env.reset(seed=3)
    _check_obs(env, obs)
    saved = env.handler.get_state()
    low, high = env.single_action_space.low, env.single_action_space.high
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs, reward, terminated, truncated, extras = env.step(
            rng.uniform(low, high, size=(2, len(low))) * 0.3
        )
        assert reward.shape == terminated.shape == truncated.shape == (2,)
        assert not extras["unstable"].any()
    _check_obs(env, obs)
    assert list(env.episode_steps) == [5, 5]
    env.handler.set_state(saved)
    np.testing.assert_allclose(env.handler.get_state().qpos, saved.qpos)
    env.close()


@pytest.mark.parametrize("backend", _params())
def test_backend_runs_the_evaluation_loop(backend: str, lift_scene: Any) -> None:
    spec = RolloutSpec.of("scripted", seed=0, num_envs=2, backend=_available(backend))
    records = list(run_task(lift_scene, spec, 2))
    assert sorted(r.episode for r in records) == [0, 1]
    assert all(r.error is None and r.success for r in records), records
