"""The evaluation loop timed over a fixed number of control steps: what the speed
benchmarks (`metasim bench physics`, a benchmark's own bench) measure of metasim.

The loop is `run_task`'s own (`metasim.evaluate.loop`: chunk refills, action checks,
settle steps, success checks, episode records and restarts), fed with more episodes
than can finish and stopped after the last step counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.hooks import Hooks
from metasim.evaluate.loop import EvalLoop
from metasim.evaluate.records import EpisodeRecord
from metasim.policies.base import Policy


@dataclass
class TimedLoop:
    """One timed run: `seconds` for `steps` control steps of `num_envs` envs each, and
    the episodes that finished meanwhile."""

    seconds: float
    steps: int
    records: list[EpisodeRecord] = field(default_factory=list)


class _Enough(Exception):
    """Stops the evaluation loop after the counted number of steps."""


class _Counter(Hooks):
    """Counts the loop's steps; `on_step(t)` after step t; stops the loop after `steps`."""

    def __init__(self, steps: int, on_step: Callable[[int], None] | None) -> None:
        self.steps, self.each, self.done = steps, on_step, 0

    def on_step(self) -> None:
        if self.each is not None:
            self.each(self.done)
        self.done += 1
        if self.done == self.steps:
            raise _Enough


def timed_loop(
    env: MetasimVectorEnv,
    policy: Policy,
    steps: int,
    on_step: Callable[[int], None] | None = None,
) -> TimedLoop:
    """Run the evaluation loop on `env` driven by `policy` (episodes 0, 1, ... seeded by
    the env, every action of a chunk executed) for `steps` control steps; `on_step(t)` after
    step t (0-based). The time covers the loop only (its first reset included), not the
    loop's set-up."""
    counter = _Counter(steps, on_step)
    todo = list(range(env.num_envs * (steps + 1)))  # more episodes than can finish
    loop = EvalLoop(env, policy, todo, hooks=counter)
    records: list[EpisodeRecord] = []
    t0 = time.perf_counter()
    try:
        for rec in loop.run():
            records.append(rec)
    except _Enough:
        pass
    return TimedLoop(time.perf_counter() - t0, counter.done, records)
