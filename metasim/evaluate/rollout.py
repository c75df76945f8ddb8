"""Run the episodes of one task: a batched env, a policy, chunk execution, records.

Episode k of a task always starts from the state drawn with `episode_seed(seed, k)`,
whatever env slot it lands in, so results do not depend on `num_envs`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from metasim.envs.noise import RuntimeNoise
from metasim.envs.vec_env import MetasimVectorEnv, episode_seed
from metasim.policies.base import Policy, PolicyContext, make_policy
from metasim.scene.compile import CompiledScene


@dataclass(frozen=True)
class EpisodeRecord:
    """One finished episode (a row of episodes.parquet)."""

    task: str
    episode: int
    seed: int
    success: bool
    progress: float
    steps: int
    wall_time_s: float
    error: str | None
    cell: str = "nominal"
    factors: str = "{}"  # JSON of the cell's factor values


def policy_context(
    env: MetasimVectorEnv, action_space: str, options: dict[str, object]
) -> PolicyContext:
    return PolicyContext(
        compiled=env.compiled,
        num_envs=env.num_envs,
        action_space=action_space,
        object_names=env.object_names,
        fixture_bodies=env.fixture_bodies,
        fixture_sites=env.fixture_sites,
        control_dt=env.compiled.control_dt,
        options=options,
    )


def run_task(
    compiled: CompiledScene,
    policy_kind: str,
    episodes: int | Sequence[int],
    seed: int,
    num_envs: int,
    backend: str = "mujoco",
    action_space: str = "ee_delta",
    execute: int | None = None,
    policy_options: dict[str, object] | None = None,
    threads: int | None = None,
    on_step: Callable[[], None] | None = None,
    noise: RuntimeNoise | None = None,
    cell: str = "nominal",
    factors: dict[str, object] | None = None,
) -> Iterator[EpisodeRecord]:
    """Yield one record per episode as it finishes (not in episode order).

    `episodes` is a count (episodes 0..n-1) or the list of episode indices to run (what
    a resumed run still misses). A policy that raises or returns unusable actions fails
    the episodes it was driving (recorded with the reason); the run goes on.
    """
    todo = list(range(episodes)) if isinstance(episodes, int) else list(episodes)
    if not todo:
        return
    n = max(1, min(num_envs, len(todo)))
    env = MetasimVectorEnv(
        compiled,
        num_envs=n,
        backend=backend,
        action_space=action_space,  # type: ignore[arg-type]
        autoreset=False,
        noise=noise,
        nthread=threads,
    )
    factors_json = json.dumps(factors or {}, sort_keys=True, default=str)
    try:
        policy: Policy = make_policy(
            policy_kind, policy_context(env, action_space, policy_options or {})
        )
        for rec in _Loop(env, policy, compiled, todo, seed, execute, on_step).run():
            yield replace(rec, cell=cell, factors=factors_json)
    finally:
        env.close()


class _Loop:
    """Slots of a batched env fed with episodes from `todo`; chunked actions per slot."""

    def __init__(
        self,
        env: MetasimVectorEnv,
        policy: Policy,
        compiled: CompiledScene,
        todo: list[int],
        seed: int,
        execute: int | None,
        on_step: Callable[[], None] | None,
    ) -> None:
        self.env, self.policy, self.seed = env, policy, seed
        self.execute, self.on_step = execute, on_step
        self.name = compiled.scene.name
        self.instruction = compiled.scene.task.instruction
        n = env.num_envs
        self.queue = list(todo)
        self.episode_of = np.full(n, -1)  # which episode each slot runs; -1 when idle
        self.started = np.zeros(n)
        self.chunk = np.zeros((0,))
        self.pos = np.zeros(n, dtype=np.int64)  # next action of each slot's chunk
        self.length = np.zeros(n, dtype=np.int64)  # actions to execute from each chunk

    def run(self) -> Iterator[EpisodeRecord]:
        n = self.env.num_envs
        first = [self.queue.pop(0) for _ in range(n)]
        self.episode_of[:] = first
        self.obs, _ = self.env.reset(
            options={"env_ids": np.arange(n), "seeds": [episode_seed(self.seed, k) for k in first]}
        )
        self.started[:] = time.perf_counter()
        self.policy.reset(self.instruction)
        while (self.episode_of >= 0).any():
            # A policy's failure fails the episodes it drives, never the run.
            try:
                self._refill_chunks()
            except Exception as exc:
                reason = f"policy error: {type(exc).__name__}: {exc}"
                yield from self._finish(np.flatnonzero(self.episode_of >= 0), None, reason)
                continue
            action = self.chunk[np.arange(n), self.pos]
            try:
                self.obs, _, _, _, extras = self.env.step(action)
            except ValueError as exc:  # the controller refused the actions (shape, NaN)
                reason = f"invalid action: {exc}"
                yield from self._finish(np.flatnonzero(self.episode_of >= 0), None, reason)
                continue
            self.pos += 1
            if self.on_step is not None:
                self.on_step()
            if "episode" in extras:
                ep = extras["episode"]
                yield from self._finish(np.asarray(ep["env_ids"]), ep, None)

    def _refill_chunks(self) -> None:
        need = self.pos >= self.length
        if not need.any():
            return
        fresh = np.asarray(self.policy.act(self.obs), dtype=np.float64)
        if fresh.ndim != 3 or fresh.shape[0] != self.env.num_envs:
            raise ValueError(f"act() must return (B, H, D) chunks, got shape {fresh.shape}")
        if self.chunk.shape != fresh.shape:
            self.chunk = fresh.copy()
        self.chunk[need] = fresh[need]
        self.pos[need] = 0
        h = fresh.shape[1]
        self.length[need] = h if self.execute is None else min(self.execute, h)

    def _finish(
        self, slots: np.ndarray, ep: dict[str, np.ndarray] | None, error: str | None
    ) -> Iterator[EpisodeRecord]:
        """Record the episodes of `slots` and start the next queued ones in them."""
        restart: list[int] = []
        now = time.perf_counter()
        for j, slot in enumerate(slots):
            k = int(self.episode_of[slot])
            if k < 0:
                continue
            if ep is not None:
                unstable = bool(ep["unstable"][j])
                yield EpisodeRecord(
                    task=self.name,
                    episode=k,
                    seed=int(ep["seed"][j]),
                    success=bool(ep["success"][j]),
                    progress=float(ep["progress"][j]),
                    steps=int(ep["length"][j]),
                    wall_time_s=now - float(self.started[slot]),
                    error="physics unstable (NaN state)" if unstable else None,
                )
            else:
                yield EpisodeRecord(
                    task=self.name,
                    episode=k,
                    seed=episode_seed(self.seed, k),
                    success=False,
                    progress=0.0,
                    steps=int(self.env._steps[slot]),
                    wall_time_s=now - float(self.started[slot]),
                    error=error,
                )
            if self.queue:
                self.episode_of[slot] = self.queue.pop(0)
                restart.append(int(slot))
            else:
                self.episode_of[slot] = -1
        if restart:
            ids = np.asarray(restart)
            seeds = [episode_seed(self.seed, int(self.episode_of[i])) for i in ids]
            self.obs, _ = self.env.reset(options={"env_ids": ids, "seeds": seeds})
            self.policy.reset(self.instruction, ids)
            self.started[ids] = time.perf_counter()
            self.pos[ids] = self.length[ids]  # a fresh episode starts with a fresh chunk
