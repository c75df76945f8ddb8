"""Run the episodes of one task: a batched env, a policy, chunk execution, records.

Episode k of a task always starts from the state drawn with `episode_seed(seed, k)`,
whatever env slot it lands in, so results do not depend on `num_envs`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

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
    episodes: int,
    seed: int,
    num_envs: int,
    backend: str = "mujoco",
    action_space: str = "ee_delta",
    execute: int | None = None,
    policy_options: dict[str, object] | None = None,
    threads: int | None = None,
    on_step: Callable[[], None] | None = None,
) -> Iterator[EpisodeRecord]:
    """Yield one record per episode as it finishes (not in episode order)."""
    n = max(1, min(num_envs, episodes))
    env = MetasimVectorEnv(
        compiled,
        num_envs=n,
        backend=backend,
        action_space=action_space,  # type: ignore[arg-type]
        autoreset=False,
        nthread=threads,
    )
    try:
        policy: Policy = make_policy(
            policy_kind, policy_context(env, action_space, policy_options or {})
        )
        yield from _loop(env, policy, compiled, episodes, seed, execute, on_step)
    finally:
        env.close()


def _loop(
    env: MetasimVectorEnv,
    policy: Policy,
    compiled: CompiledScene,
    episodes: int,
    seed: int,
    execute: int | None,
    on_step: Callable[[], None] | None,
) -> Iterator[EpisodeRecord]:
    n = env.num_envs
    name = compiled.scene.name
    instruction = compiled.scene.task.instruction
    episode_of = np.arange(n)  # which episode each env slot runs; -1 when idle
    next_episode = n
    started = np.full(n, time.perf_counter())
    obs, _ = env.reset(
        options={"env_ids": np.arange(n), "seeds": [episode_seed(seed, k) for k in range(n)]}
    )
    policy.reset(instruction)
    chunk = np.zeros((0,))
    pos = np.zeros(n, dtype=np.int64)  # next action of each env's current chunk
    length = np.zeros(n, dtype=np.int64)  # actions to execute from each env's chunk
    while (episode_of >= 0).any():
        need = pos >= length
        if need.any():
            fresh = np.asarray(policy.act(obs))
            if chunk.shape != fresh.shape:
                chunk = fresh.copy()
            chunk[need] = fresh[need]
            pos[need] = 0
            length[need] = fresh.shape[1] if execute is None else min(execute, fresh.shape[1])
        obs, _, _, _, extras = env.step(chunk[np.arange(n), pos])
        pos += 1
        if on_step is not None:
            on_step()
        if "episode" not in extras:
            continue
        ep = extras["episode"]
        restart: list[int] = []
        for j, slot in enumerate(ep["env_ids"]):
            k = int(episode_of[slot])
            if k < 0:
                continue
            yield EpisodeRecord(
                task=name,
                episode=k,
                seed=int(ep["seed"][j]),
                success=bool(ep["success"][j]),
                progress=float(ep["progress"][j]),
                steps=int(ep["length"][j]),
                wall_time_s=time.perf_counter() - float(started[slot]),
                error="physics unstable (NaN state)" if ep["unstable"][j] else None,
            )
            if next_episode < episodes:
                episode_of[slot] = next_episode
                next_episode += 1
                restart.append(int(slot))
            else:
                episode_of[slot] = -1
        if restart:
            ids = np.asarray(restart)
            seeds = [episode_seed(seed, int(episode_of[i])) for i in ids]
            obs, _ = env.reset(options={"env_ids": ids, "seeds": seeds})
            policy.reset(instruction, ids)
            started[ids] = time.perf_counter()
            pos[ids] = length[ids]  # a fresh episode starts with a fresh chunk
