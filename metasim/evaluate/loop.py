"""The evaluation loop: env slots fed with episodes, observe -> act -> step -> finish or
refill.

Each slot of a batched env runs one episode at a time. Every step the policy's chunk
queue gives the actions of the slots it drives (`metasim.evaluate.chunks`), converted
into the env's space; slots in their settle steps (the env's, `metasim.envs.settle`) and
idle slots hold still. An episode ends when the env says so (success, time limit,
unstable physics) or when the policy fails it; it is recorded and its slot starts the
next queued episode (the env derives each episode's seed from its index).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import replace

import numpy as np

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.cells import CellPart, WorldViews, interleaved
from metasim.evaluate.chunks import ChunkQueue
from metasim.evaluate.hooks import Hooks, RolloutHooks
from metasim.evaluate.policy_io import converter_for, env_actions
from metasim.evaluate.records import EpisodeRecord
from metasim.policies.base import Policy
from metasim.policies.conventions import ActionConvention, ActionConverter


class EvalLoop:
    """The episodes `todo` of `env`'s task driven by `policy` in `env`'s slots.

    `execute` / `ensemble`: the chunk queue's (see `ChunkQueue`); `convert`: from the
    policy's convention to the env's (default: canonical actions); `hooks`: what a caller
    sees while it runs (`RolloutHooks`). The episodes start with the task's settle steps.
    `cells`: run these cells' episodes instead of `todo`, side by side (each slot takes its
    episode's cell noise before it starts; each record names its cell); `backgrounds`: each
    cell's splat group in the env's `backgrounds` (render=warp), selected per world too;
    `views`: each cell's camera and light rows, set per world too.
    """

    def __init__(
        self,
        env: MetasimVectorEnv,
        policy: Policy,
        todo: list[int],
        *,
        execute: int | None = None,
        ensemble: float | None = None,
        convert: ActionConverter | None = None,
        hooks: RolloutHooks | None = None,
        cells: Sequence[CellPart] = (),
        backgrounds: Sequence[int] = (),
        views: WorldViews | None = None,
    ) -> None:
        self.env = env
        self.convert = convert or converter_for(env.compiled, ActionConvention())
        self.chunks = ChunkQueue(policy, env.num_envs, self.convert, execute, ensemble)
        self.hooks: RolloutHooks = hooks if hooks is not None else Hooks()
        self.name = env.compiled.scene.name
        self.instruction = env.compiled.scene.task.instruction
        self.cells, self.groups, self.views = tuple(cells), list(backgrounds), views
        self.queue = deque(interleaved(self.cells) if cells else [(-1, k) for k in todo])
        self.episode_of = np.full(env.num_envs, -1)  # which episode each slot runs; -1: idle
        self.cell_of = np.full(env.num_envs, -1)  # which of `cells` each slot runs
        self.started = np.zeros(env.num_envs)  # when each slot's episode started
        self.obs: dict[str, object] = {}
        env.use_settle_steps()  # the env runs each episode's settle steps, the policy unasked

    def run(self) -> Iterator[EpisodeRecord]:
        """Yield one record per episode as it finishes (not in episode order)."""
        self._take(np.arange(self.env.num_envs))
        self._start(np.arange(self.env.num_envs), first=True)
        while (self.episode_of >= 0).any():
            settling = self.env.settle.settling
            active = (self.episode_of >= 0) & ~settling  # the slots the policy drives
            failed = self.chunks.refill(self.obs, active)  # act: chunks where due, then actions
            if not failed:
                raw = self.chunks.actions()
                action, failed = env_actions(self.env, self.convert, raw, active)
            if failed:
                yield from self._fail(failed)
                continue
            # settle steps are not the policy's: their slots are idle (-1) to the hook
            self.hooks.observe(np.where(settling, -1, self.episode_of), self.obs, raw)
            self.obs, _, _, _, extras = self.env.step(action)
            self.hooks.on_applied(self.episode_of.copy(), self.env.applied_actions.copy())
            self.chunks.advance(~settling)
            self.hooks.on_step()
            if "episode" in extras:
                ep = extras["episode"]
                yield from self._finish(np.asarray(ep["env_ids"]), ep, None)

    def _start(self, slots: np.ndarray, first: bool = False) -> None:
        """Reset `slots` to start the episodes `episode_of` names there."""
        episodes = [int(self.episode_of[i]) for i in slots]
        if self.cells:  # each slot's world takes its cell's noise (and background) first
            cells = [int(self.cell_of[i]) for i in slots]
            self.env.set_noise(slots, [self.cells[c].noise for c in cells])
            if self.groups:
                self.env.select_backgrounds(slots, [self.groups[c] for c in cells])
            if self.views is not None:
                self.views.select(self.env.handler, slots, cells)
        self.obs, _ = self.env.reset(options={"env_ids": slots, "episodes": episodes})
        self.hooks.on_start(slots, np.asarray(episodes))
        self.chunks.start(self.instruction, None if first else slots)
        self.started[slots] = time.perf_counter()

    def _fail(self, failed: dict[int, str]) -> Iterator[EpisodeRecord]:
        """End the episodes of the slots in `failed` with their reasons."""
        for reason in sorted(set(failed.values())):
            slots = np.array([i for i, r in failed.items() if r == reason])
            yield from self._finish(slots, None, reason)

    def _finish(
        self, slots: np.ndarray, ep: dict[str, np.ndarray] | None, error: str | None
    ) -> Iterator[EpisodeRecord]:
        """Record the episodes of `slots` (the env's numbers `ep`, or failed with `error`)
        and start the next queued ones in them."""
        restart: list[int] = []
        now = time.perf_counter()
        for j, slot in enumerate(slots):
            k = int(self.episode_of[slot])
            if k < 0:
                continue
            wall = now - float(self.started[slot])
            rec = (
                self._failed(k, int(slot), wall, error)
                if ep is None
                else self._ended(k, j, ep, wall)
            )
            yield self._labelled(rec, int(slot))
            if self.queue:
                restart.append(int(slot))
            self._take(np.array([slot]))
        if restart:
            self._start(np.asarray(restart))

    def _take(self, slots: np.ndarray) -> None:
        """Give `slots` the next queued episodes (idle, -1, once the queue is empty)."""
        for slot in slots:
            self.cell_of[slot], self.episode_of[slot] = (
                self.queue.popleft() if self.queue else (-1, -1)
            )

    def _labelled(self, rec: EpisodeRecord, slot: int) -> EpisodeRecord:
        """`rec` with the cell of `slot` (when the loop runs cells side by side)."""
        if not self.cells:
            return rec
        part = self.cells[int(self.cell_of[slot])]
        return replace(rec, cell=part.cell, factors=dict(part.factors))

    def _ended(self, k: int, j: int, ep: dict[str, np.ndarray], wall: float) -> EpisodeRecord:
        """Episode `k`, the `j`-th of the env's finished episodes `ep`."""
        unstable = bool(ep["unstable"][j])
        return EpisodeRecord(
            task=self.name,
            episode=k,
            seed=int(ep["seed"][j]),
            success=bool(ep["success"][j]),
            progress=float(ep["progress"][j]),
            steps=int(ep["length"][j]),
            wall_time_s=wall,
            error="physics unstable (NaN state)" if unstable else None,
        )

    def _failed(self, k: int, slot: int, wall: float, error: str | None) -> EpisodeRecord:
        """Episode `k` of `slot`, failed by the policy with `error`."""
        return EpisodeRecord(
            task=self.name,
            episode=k,
            seed=int(self.env.episode_seeds[slot]),
            success=False,
            progress=0.0,
            steps=int(self.env.episode_steps[slot]),
            wall_time_s=wall,
            error=error,
        )
