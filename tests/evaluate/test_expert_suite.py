"""The scripted expert solves every built-in task: >= 90% over 50 seeded episodes."""

from __future__ import annotations

import pytest

from metasim.evaluate.config import compose
from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec

SUITE = compose([]).suite.tasks


@pytest.mark.slow
@pytest.mark.parametrize("task", SUITE)
def test_expert_reaches_90_percent(task):
    compiled = compose([]).tasks()[SUITE.index(task)].compile()
    records = list(run_task(compiled, RolloutSpec.of("scripted", seed=0, num_envs=16), 50))
    assert len(records) == 50
    rate = sum(r.success for r in records) / 50
    print(f"{task}: {rate:.2f}")
    assert rate >= 0.9, f"{task}: expert success {rate:.2f} < 0.90"
    assert not any(r.error for r in records)


@pytest.mark.parametrize("task", SUITE)
def test_expert_smoke(task):
    """Fast check for every CI run: the expert solves the first 4 episodes of each task."""
    compiled = compose([]).tasks()[SUITE.index(task)].compile()
    records = list(run_task(compiled, RolloutSpec.of("scripted", seed=0, num_envs=4), 4))
    assert sum(r.success for r in records) >= 3
