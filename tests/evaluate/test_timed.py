"""`timed_loop`: the evaluation loop stopped after a counted number of control steps."""

from __future__ import annotations

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.policy_io import policy_context
from metasim.evaluate.timed import timed_loop
from metasim.policies.base import make_policy
from metasim.scene.compile import CompiledScene


def test_the_loop_stops_after_the_counted_steps(lift_scene: CompiledScene) -> None:
    env = MetasimVectorEnv(lift_scene, num_envs=2, autoreset=False)
    try:
        policy = make_policy("scripted", policy_context(env, "ee_delta"))
        seen: list[int] = []
        run = timed_loop(env, policy, 7, seen.append)
        assert run.steps == 7 and seen == list(range(7))
        assert run.seconds > 0.0 and run.records == []  # too few steps to finish one
        again = timed_loop(env, policy, 2)  # the same env, from a fresh reset
        assert again.steps == 2
    finally:
        env.close()
