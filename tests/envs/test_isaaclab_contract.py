"""The Isaac Lab env contract (metasim.envs.isaaclab) over every registered benchmark (the
first task of each suite, in the lanes tests/test_benchmark_contract.py puts them) and the
built-in suite, on every backend the benchmark claims: shapes, dtypes, device, extras
keys, autoreset; then the RL libraries' own consumers of it (rsl_rl's `VecEnv`, skrl's
Isaac Lab wrapper), where installed (the `rl` extra)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from metasim.envs.isaaclab import IsaacLabEnv, RslRlVecEnv
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.reference.benchmark import BENCHMARKS
from metasim.scene.sources import all_suites
from tests.test_benchmark_contract import _backends, _entry, _params

torch = pytest.importorskip("torch", reason="the torch extra is not installed")

FIRST = all_suites()["scenes"][0]  # the built-in suite's first task
BUILTIN = [
    pytest.param("builtin", "scenes", FIRST, "mujoco", id="builtin-scenes-mujoco"),
    pytest.param(
        "builtin", "scenes", FIRST, "warp", id="builtin-scenes-warp", marks=pytest.mark.slow
    ),
]


def check_contract(env: Any) -> None:
    """Isaac Lab's RL env surface on `env` (any object claiming it), with autoreset."""
    n, device = env.num_envs, torch.device(env.device)
    assert env.unwrapped is env and env.cfg.is_finite_horizon is False
    assert isinstance(env.max_episode_length, int) and env.max_episode_length > 1
    obs, extras = env.reset(seed=0)
    assert isinstance(extras, dict)

    def check_obs(obs: dict[str, Any]) -> None:
        assert set(obs) == {"policy", "critic"}
        for group, value in obs.items():
            space = env.single_observation_space[group]
            assert isinstance(value, torch.Tensor) and value.dtype == torch.float32
            assert value.shape == (n, *space.shape) and value.device == device
            assert torch.isfinite(value).all(), group
        assert env.observation_space["policy"].shape == (n, *obs["policy"].shape[1:])

    check_obs(obs)
    buf = env.episode_length_buf
    assert buf.dtype == torch.long and buf.shape == (n,) and buf.device == device
    assert (buf == 0).all()
    assert env.single_action_space.shape == (env.num_actions,)
    hold = torch.zeros(n, env.num_actions, device=device)
    obs, reward, terminated, truncated, extras = env.step(hold)
    check_obs(obs)
    assert reward.shape == (n,) and reward.dtype == torch.float32 and reward.device == device
    assert torch.isfinite(reward).all()
    for flag in (terminated, truncated, extras["time_outs"]):
        assert flag.shape == (n,) and flag.dtype == torch.bool and flag.device == device
    assert torch.equal(extras["time_outs"], truncated) and isinstance(extras["log"], dict)
    assert (env.episode_length_buf == 1).all()
    # Autoreset: env 0 runs out of time on the next step and restarts in the same step.
    env.episode_length_buf[0] = env.max_episode_length - 1
    obs, reward, terminated, truncated, extras = env.step(hold)
    check_obs(obs)
    assert bool(truncated[0] | terminated[0]) and bool(extras["time_outs"][0] | terminated[0])
    assert int(env.episode_length_buf[0]) == 0 and int(env.episode_length_buf[1]) == 2
    log = extras["log"]
    assert log["Episode_Termination/time_out"] + log["Episode_Termination/success"] >= 1
    assert 0.0 <= log["Metrics/success"] <= 1.0 and "Episode_Reward/total" in log
    assert env.env.episode_steps[0] == 0  # the metasim env restarted it too


@pytest.mark.parametrize(("bench", "suite", "ref", "backend"), [*_params(_backends()), *BUILTIN])
def test_first_task_meets_the_isaaclab_contract(
    bench: str, suite: str, ref: str, backend: str
) -> None:
    if bench != "builtin":
        _entry(bench, ref)
        assert backend in BENCHMARKS[bench].backends
    if backend == "warp":
        pytest.importorskip("mujoco_warp", reason="the warp extra is not installed")
    env = IsaacLabEnv(MetasimVectorEnv(ref, num_envs=2, backend=backend))
    try:
        check_contract(env)
    finally:
        env.close()


@pytest.fixture(scope="module")
def lift() -> Any:
    env = IsaacLabEnv(MetasimVectorEnv("lift_cube", num_envs=3, seed=1))
    yield env
    env.close()


def test_the_raw_env_does_not_meet_it() -> None:
    """The contract's checks are not vacuous: the metasim env itself (NumPy arrays,
    `policy`/`privileged` groups of terms, no episode buffer) fails them."""
    env = MetasimVectorEnv("lift_cube", num_envs=2)
    try:
        with pytest.raises((AssertionError, AttributeError)):
            check_contract(env)
    finally:
        env.close()


def test_dense_reward_of_lift_and_its_log(lift: IsaacLabEnv) -> None:
    """lift_cube's terms (reach, lift) are in (0, weight] and their episode sums are
    logged when episodes end; the same actions in the env's units give the same reward."""
    assert [t.name for t in lift.reward_terms] == ["reach_cube", "lift_cube"]
    lift.reset(seed=3)
    _, reward, *_ = lift.step(torch.zeros(3, lift.num_actions))
    assert ((reward > 0) & (reward < 1.0)).all()  # reaching only: the cube rests
    lift.episode_length_buf[:] = lift.max_episode_length - 1
    *_, extras = lift.step(torch.zeros(3, lift.num_actions))
    assert {"Episode_Reward/reach_cube", "Episode_Reward/lift_cube"} <= set(extras["log"])
    assert extras["log"]["Episode_Termination/time_out"] == 3


def test_normalized_actions_span_the_env_bounds(lift: IsaacLabEnv) -> None:
    low, high = lift.env.controller.bounds()
    np.testing.assert_allclose(lift.env_actions(-np.ones((1, 7))), np.asarray(low)[None])
    np.testing.assert_allclose(lift.env_actions(3 * np.ones((1, 7))), np.asarray(high)[None])


def test_rsl_rl_vec_env_interface(lift: IsaacLabEnv) -> None:
    """rsl_rl's `VecEnv`: every abstract member, obs as a TensorDict of the groups,
    dones (long) = terminated | truncated, the episode buffer writable through it."""
    vec_env = pytest.importorskip("rsl_rl.env", reason="the rl extra is not installed")
    from tensordict import TensorDict

    env = RslRlVecEnv(lift)
    vec_env.VecEnv.register(RslRlVecEnv)
    for name in ("num_envs", "num_actions", "max_episode_length", "episode_length_buf"):
        assert getattr(env, name) is not None, name
    assert env.device == lift.device and isinstance(env.cfg, dict)
    obs = env.get_observations()
    assert isinstance(obs, TensorDict) and obs.batch_size == torch.Size([3])
    assert set(obs.keys()) == {"policy", "critic"}
    env.episode_length_buf = torch.full((3,), lift.max_episode_length - 1)
    obs, reward, dones, extras = env.step(torch.zeros(3, env.num_actions))
    assert dones.dtype == torch.long and bool((dones == 1).all())
    assert extras["time_outs"].all() and reward.shape == (3,)


def test_skrl_isaaclab_wrapper(lift: IsaacLabEnv) -> None:
    """skrl's own Isaac Lab wrapper takes the contract env as it is."""
    wrappers = pytest.importorskip("skrl.envs.wrappers.torch", reason="the rl extra is missing")
    env = wrappers.wrap_env(lift, wrapper="isaaclab")
    assert (
        env.num_envs == 3 and env.state_space.shape == lift.single_observation_space["critic"].shape
    )
    obs, _ = env.reset()
    assert obs.shape == (3, lift.single_observation_space["policy"].shape[0])
    obs, reward, terminated, truncated, _ = env.step(torch.zeros(3, lift.num_actions))
    assert reward.shape == (3, 1) and terminated.shape == (3, 1) and env.state().shape[0] == 3


def test_a_shorter_episode_length_times_out_and_restarts() -> None:
    """`max_episode_length` (Isaac Lab's episode_length_s, in steps) below the task's time
    limit: every env times out at it and restarts, the metasim env with it."""
    env = IsaacLabEnv(MetasimVectorEnv("lift_cube", num_envs=2), max_episode_length=3)
    try:
        env.reset(seed=0)
        hold = torch.zeros(2, env.num_actions)
        outs = [env.step(hold) for _ in range(3)]
        assert [bool(o[3].any()) for o in outs] == [False, False, True]
        assert outs[-1][4]["time_outs"].all() and (env.episode_length_buf == 0).all()
        assert (env.env.episode_steps == 0).all()
    finally:
        env.close()
