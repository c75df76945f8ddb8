"""The evaluation loop (`metasim.evaluate.loop`) through `run_task`: every hook in its
order, slots refilled with queued episodes, settle steps with chunked and ensembled
policies."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.hooks import Hooks
from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.scene.compile import CompiledScene, compile_scene


class Log(Hooks):
    """Every hook call: its name, and the episodes it names."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def on_env(self, env: MetasimVectorEnv) -> None:
        self.calls.append(("on_env", env.num_envs))

    def on_start(self, slots: np.ndarray, episodes: np.ndarray) -> None:
        self.calls.append(("on_start", (slots.tolist(), episodes.tolist())))

    def observe(self, episodes: np.ndarray, obs: dict[str, Any], actions: np.ndarray) -> None:
        self.calls.append(("observe", episodes.tolist()))

    def on_applied(self, episodes: np.ndarray, actions: np.ndarray) -> None:
        self.calls.append(("on_applied", episodes.tolist()))

    def on_step(self) -> None:
        self.calls.append(("on_step", None))


@pytest.fixture(scope="module")
def settled(lift_scene: CompiledScene) -> CompiledScene:
    s = lift_scene.scene
    task = s.task.model_copy(update={"settle_steps": 3})
    return compile_scene(s.model_copy(update={"task": task}), source=lift_scene.source)


def test_hooks_come_in_order_and_slots_are_refilled(lift_scene: CompiledScene) -> None:
    log = Log()
    records = list(run_task(lift_scene, RolloutSpec.of("scripted", num_envs=2), 3, hooks=log))
    assert sorted(r.episode for r in records) == [0, 1, 2] and all(r.success for r in records)
    names = [c[0] for c in log.calls]
    assert names[:2] == ["on_env", "on_start"] and log.calls[1][1] == ([0, 1], [0, 1])
    steps = [c for c in log.calls if c[0] == "on_step"]
    assert len(steps) == names.count("observe") == names.count("on_applied")
    body = [n for n in names if n != "on_start"][1:]
    assert body == ["observe", "on_applied", "on_step"] * len(steps)
    restarts = [c[1] for c in log.calls[2:] if c[0] == "on_start"]
    assert len(restarts) == 1 and restarts[0][1] == [2]  # the third episode in a freed slot


@pytest.mark.parametrize("chunking", [{"execute": 2}, {"ensemble": 0.1}])
def test_settle_steps_come_first_with_chunks_and_ensembling(
    settled: CompiledScene, chunking: dict[str, Any]
) -> None:
    log = Log()
    spec = RolloutSpec.of("scripted", num_envs=1, **chunking)
    (rec,) = list(run_task(settled, spec, [4], hooks=log))
    assert rec.error is None and rec.success
    seen = [c[1][0] for c in log.calls if c[0] == "observe"]
    assert seen[:3] == [-1, -1, -1] and set(seen[3:]) == {4}  # settle steps: not the policy's
    assert len(seen) == rec.steps
