"""A failing policy fails its episodes, with the reason recorded; the run goes on."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.policies.base import PolicyContext, register_policy
from metasim.policies.scripted import ScriptedExpert


class FaultyExpert(ScriptedExpert):
    """The scripted expert with a fault injected on its `fault_at`-th call."""

    fault: str = "raise"
    fault_at: int = 5

    def __init__(self, ctx: PolicyContext) -> None:
        super().__init__(ctx)
        self.calls = 0

    def act(self, obs, env_ids=None):
        self.calls += 1
        chunk = super().act(obs)
        if self.calls != self.fault_at:
            return chunk
        if self.fault == "raise":
            raise RuntimeError("server closed the connection")
        if self.fault == "nan":
            return np.full_like(chunk, np.nan)
        return chunk[:, :, :3]  # wrong action width


@pytest.mark.parametrize(
    "fault, reason",
    [
        ("raise", "policy error: RuntimeError: server closed the connection"),
        ("nan", "invalid action: actions contain NaN"),
        ("shape", "invalid action"),
    ],
)
def test_faults_are_recorded_and_the_run_goes_on(lift_scene, fault, reason):
    name = f"faulty_{fault}"
    register_policy(name)(lambda ctx: type(name, (FaultyExpert,), {"fault": fault})(ctx))
    records = list(run_task(lift_scene, RolloutSpec.of(name, seed=0, num_envs=2), 6))
    assert sorted(r.episode for r in records) == list(range(6))
    failed = [r for r in records if r.error]
    assert len(failed) == 2  # the two episodes in flight when the fault hit
    assert all(r.error.startswith(reason) and not r.success for r in failed)
    assert sum(r.success for r in records if not r.error) == 4


def test_a_policy_that_always_fails_cannot_hang_the_run(lift_scene):
    class Broken(ScriptedExpert):
        def act(self, obs, env_ids=None):
            raise ConnectionError("refused")

    register_policy("always_broken")(Broken)
    records = list(run_task(lift_scene, RolloutSpec.of("always_broken", seed=0, num_envs=2), 5))
    assert len(records) == 5 and all(r.error and "refused" in r.error for r in records)
