"""The scripted expert acts for envs in different phases, in one batch, exactly as it
acts for each env alone (its one pass over all envs with per-phase numbers against the
single-phase path)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.policy_io import policy_context
from metasim.paths import SCENES
from metasim.policies.base import make_policy
from metasim.policies.scripted import ScriptedExpert


def _alone(expert: ScriptedExpert, i: int, env: MetasimVectorEnv) -> ScriptedExpert:
    """A one-env expert holding env i's phase, count, anchor and fresh flag."""
    one = copy.copy(expert)
    one.ctx = policy_context(MetasimVectorEnv(env.compiled, num_envs=1), "ee_delta")
    for name in ("phase", "count", "anchor", "fresh"):
        setattr(one, name, getattr(expert, name)[i : i + 1].copy())
    return one


@pytest.mark.parametrize("scene", ["stack_cube", "open_drawer", "push_to_region"])
def test_batch_equals_each_env_alone(scene):
    env = MetasimVectorEnv(SCENES / f"{scene}.yaml", num_envs=6, seed=0)
    expert = make_policy("scripted", policy_context(env, "ee_delta"))
    assert isinstance(expert, ScriptedExpert)
    obs, _ = env.reset(seed=0)
    compared = 0
    for _ in range(160):
        if compared < 12 and len(set(expert.phase.tolist())) > 1:  # several phases
            alone = [_alone(expert, i, env) for i in range(env.num_envs)]
            sliced = [
                {g: {k: v[i : i + 1] for k, v in obs[g].items()} for g in obs}
                for i in range(env.num_envs)
            ]
            batch = expert.act(obs, np.arange(env.num_envs))
            for i, (one, o) in enumerate(zip(alone, sliced, strict=True)):
                np.testing.assert_allclose(one.act(o, np.arange(1))[0], batch[i], atol=1e-12)
                assert one.phase[0] == expert.phase[i] and one.count[0] == expert.count[i]
            compared += 1
            action = batch[:, 0]
        else:
            action = expert.act(obs, np.arange(env.num_envs))[:, 0]
        obs, *_ = env.step(action)
    assert compared >= 3  # the batch did split across phases, several times
