"""Run the episodes of one task: a batched env, a policy, chunk execution, records.

Episode k of a task always starts from the state drawn with `episode_seed(seed, k)`,
whatever env slot it lands in, so results do not depend on `num_envs`: the env derives
it (`metasim.tasks.seeds`); the loop names the episodes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import ValidationError

from metasim.envs.noise import RuntimeNoise
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.errors import MetasimInputError, one_line
from metasim.evaluate.capacity import backend_options, overflow_errors
from metasim.evaluate.policy_io import camera_views, converter_for, policy_context
from metasim.evaluate.records import EpisodeRecord
from metasim.evaluate.spec import RolloutSpec
from metasim.policies.base import Policy, PolicyFailure, make_policy
from metasim.policies.conventions import ActionConvention, ActionConverter
from metasim.scene.compile import CompiledScene

# observe(episode of each slot (B,) with -1 for idle, obs, actions (B, D)) before a step
Observer = Callable[[np.ndarray, dict[str, Any], np.ndarray], None]
# on_applied(episode of each slot (B,) with -1 for idle, actions (B, D)) after every env
# step: the env-space actions the simulator's controller received (settle steps included,
# after runtime action noise and latency; `MetasimVectorEnv.applied_actions`).
AppliedObserver = Callable[[np.ndarray, np.ndarray], None]
# on_start(env slots (k,), their new episodes (k,)) right after those slots were reset:
# the env's state is the episodes' start (read it with `env.handler`, see `on_env`).
StartObserver = Callable[[np.ndarray, np.ndarray], None]


def run_task(
    compiled: CompiledScene,
    spec: RolloutSpec,
    episodes: int | Sequence[int],
    *,
    noise: RuntimeNoise | None = None,
    cell: str = "nominal",
    factors: Mapping[str, object] | None = None,
    on_step: Callable[[], None] | None = None,
    on_env: Callable[[MetasimVectorEnv], None] | None = None,
    observe: Observer | None = None,
    on_applied: AppliedObserver | None = None,
    on_start: StartObserver | None = None,
) -> Iterator[EpisodeRecord]:
    """Yield one record per episode of `spec`'s policy on `compiled`, as each finishes
    (not in episode order).

    `on_step()` is called after every env step, `on_env(env)` once the env exists
    (what `metasim report` uses to film a replay), `observe(episodes, obs, actions)` before
    every env step with each slot's episode (-1: idle), the observation and the policy's
    actions in its declared convention (B, D) (what `metasim collect` records).
    `on_applied(episodes, actions)` after every env step with the actions the simulator
    actually applied (B, D), settle steps included, and `on_start(slots, episodes)` after
    slots were reset to start episodes (what `metasim libero xcheck` replays in LIBERO).

    `episodes` is a count (episodes 0..n-1) or the list of episode indices to run (what
    a resumed run still misses). A policy that raises or returns unusable actions fails
    the episodes it was driving (recorded with the reason); the run goes on.
    """
    todo = list(range(episodes)) if isinstance(episodes, int) else list(episodes)
    if not todo:
        return
    convert, views = check_fit(compiled, spec)
    n = max(1, min(spec.num_envs, len(todo)))
    env = MetasimVectorEnv(
        compiled,
        num_envs=n,
        backend=spec.backend,
        render=spec.render,
        render_spp=spec.render_spp,
        action_space=convert.env_space,
        cameras=views,
        autoreset=False,
        noise=noise,
        nthread=spec.threads,
        seed=spec.seed,
        **backend_options(spec.backend, spec.nconmax, spec.njmax),
    )
    cell_factors = dict(factors or {})
    policy: Policy | None = None
    try:
        ctx = policy_context(env, convert.env_space, spec.options)
        try:
            policy = make_policy(spec.policy, ctx)
        except ValueError as exc:  # the policy cannot drive this scene: say why, no traceback
            if isinstance(exc, MetasimInputError):
                raise
            raise MetasimInputError(
                f"policy {spec.policy!r} on scene {compiled.scene.name!r}", [one_line(str(exc))]
            ) from None
        env.add_views(policy.views)  # views a policy derives (LeRobot's)
        if getattr(policy, "device_images", False):  # frames never copied to the host
            env.use_device_images()  # (where the backend and the rig share a device)
        if on_env is not None:
            on_env(env)
        loop = _Loop(env, policy, compiled, todo, spec.execute, on_step, convert, spec.ensemble)
        loop.observe = observe
        loop.on_applied, loop.on_start = on_applied, on_start
        with overflow_errors(env.handler, compiled.scene.name):
            for rec in loop.run():
                yield replace(rec, cell=cell, factors=cell_factors)
    finally:
        if policy is not None:
            policy.close()
        env.close()


def check_fit(compiled: CompiledScene, spec: RolloutSpec) -> tuple[ActionConverter, list[Any]]:
    """The converter of `spec`'s actions and the camera views of its observation on this
    scene; a convention the scene's robot or cameras cannot serve is an input error."""
    try:
        convert, views = (
            converter_for(compiled, spec.actions),
            camera_views(compiled, spec.observation),
        )
    except (ValueError, ValidationError) as exc:
        raise MetasimInputError("policy config", [f"policy.{one_line(str(exc))}"]) from None
    if views and compiled.untextured:  # refused before any run, whatever the renderer
        cams = ", ".join(sorted({v.camera for v in views}))
        raise MetasimInputError(
            str(compiled.source or compiled.scene.name),
            [f"prebuilt without its textures (for state-only runs), and the policy's "
             f"observation renders its cameras ({cams}), which would not show its images"],
            "Prebuild the task with its textures (no --no-textures), or use a state-only policy",
        )  # fmt: skip
    return convert, views


class _Loop:
    """Slots of a batched env fed with episodes from `todo`; chunked actions per slot.

    Each slot executes `execute` actions of its chunk (or all of it) before it asks for
    the next, or, with `ensemble`, asks every step and executes the weighted mean of
    every prediction for the current step. Actions are converted from the policy's
    convention into the env's with the observation of the step they execute at.
    """

    def __init__(
        self,
        env: MetasimVectorEnv,
        policy: Policy,
        compiled: CompiledScene,
        todo: list[int],
        execute: int | None,
        on_step: Callable[[], None] | None,
        convert: ActionConverter | None = None,
        ensemble: float | None = None,
    ) -> None:
        self.env, self.policy = env, policy
        self.execute, self.on_step, self.ensemble = execute, on_step, ensemble
        self.convert = convert or converter_for(compiled, ActionConvention())
        self.name = compiled.scene.name
        self.instruction = compiled.scene.task.instruction
        n = env.num_envs
        # Settle steps (LIBERO's 10): each episode starts with them, the policy unasked.
        self.settle_steps = compiled.scene.task.settle_steps
        self.settling = np.zeros(n, dtype=np.int64)
        self.settle_action = env.controller.settle_action(n) if self.settle_steps else None
        self.queue = list(todo)
        self.episode_of = np.full(n, -1)  # which episode each slot runs; -1 when idle
        self.started = np.zeros(n)
        dim = self.convert.dim
        self.chunk = np.zeros((n, 1, dim))
        self.pos = np.zeros(n, dtype=np.int64)  # next action of each slot's chunk
        self.length = np.zeros(n, dtype=np.int64)  # actions to execute from each chunk
        # ensembling: weighted sums of the predictions for steps t, t+1, ...
        self.acc: np.ndarray = np.zeros((n, 0, dim))
        self.wsum: np.ndarray = np.zeros((n, 0))
        self.observe: Observer | None = None
        self.on_applied: AppliedObserver | None = None
        self.on_start: StartObserver | None = None
        self.raw = np.zeros((n, dim))  # this step's actions in the policy's convention
        self.all_slots = np.arange(n)
        self.active = np.zeros(n, dtype=bool)  # see run()
        self.all_active = False

    def run(self) -> Iterator[EpisodeRecord]:
        n = self.env.num_envs
        first = [self.queue.pop(0) for _ in range(n)]
        self.episode_of[:] = first
        self.obs, _ = self.env.reset(options=self._reset_options(np.arange(n), first))
        self.settling[:] = self.settle_steps
        self.started[:] = time.perf_counter()
        self.policy.reset(self.instruction)
        if self.on_start is not None:
            self.on_start(np.arange(n), np.asarray(first))
        while (self.episode_of >= 0).any():
            # slots running an episode past its settle steps: the policy's to drive
            self.active = (self.episode_of >= 0) & (self.settling == 0)
            self.all_active = bool(self.active.all())
            failed = self._refill_chunks()
            if failed:
                yield from self._fail(failed)
                continue
            action, failed = self._actions()
            if failed:
                yield from self._fail(failed)
                continue
            if self.observe is not None:  # settle steps are not the policy's: idle (-1)
                self.observe(np.where(self.settling > 0, -1, self.episode_of), self.obs, self.raw)
            self.obs, _, _, _, extras = self.env.step(action)
            if self.on_applied is not None:
                self.on_applied(self.episode_of.copy(), self.env.applied_actions.copy())
            if self.settle_steps:
                acting = self.settling == 0
                self.pos[acting] += 1
                self.settling[~acting] -= 1
            else:  # nobody settles (pos of idle slots is reset when they start)
                self.pos += 1
            if self.on_step is not None:
                self.on_step()
            if "episode" in extras:
                ep = extras["episode"]
                yield from self._finish(np.asarray(ep["env_ids"]), ep, None)

    def _reset_options(self, env_ids: np.ndarray, episodes: list[int]) -> dict[str, object]:
        """Reset options of slots `env_ids` starting `episodes` (the env derives each
        episode's seed from its index and its own seed)."""
        return {"env_ids": env_ids, "episodes": episodes}

    def _fail(self, failed: dict[int, str]) -> Iterator[EpisodeRecord]:
        for reason in sorted(set(failed.values())):
            slots = np.array([i for i, r in failed.items() if r == reason])
            yield from self._finish(slots, None, reason)

    def _refill_chunks(self) -> dict[int, str]:
        """Ask the policy for chunks where needed; the slots that got none, with why."""
        active = self.active
        need = active if self.ensemble is not None else (self.pos >= self.length) & active
        everyone = self.all_active and bool(need.all())  # (one env: the usual case)
        if not everyone and not need.any():
            return {}
        ids = self.all_slots if everyone else np.flatnonzero(need)
        failed: dict[int, str] = {}
        try:
            fresh = np.asarray(self.policy.act(self.obs, ids), dtype=np.float64)
        except PolicyFailure as exc:
            fresh = np.asarray(exc.chunk, dtype=np.float64)
            failed = {int(i): f"policy error: {r}" for i, r in exc.failed.items()}
        except Exception as exc:
            return {int(i): f"policy error: {type(exc).__name__}: {exc}" for i in ids}
        n, dim = self.env.num_envs, self.convert.dim
        if fresh.ndim != 3 or fresh.shape[0] != n or fresh.shape[2] != dim:
            reason = (
                f"invalid action: act() must return (B={n}, H, {dim}) chunks in the declared "
                f"convention ({self.convert.conv.describe(self.convert.n_arm)}), "
                f"got shape {fresh.shape}"
            )
            return {int(i): reason for i in ids}
        h = fresh.shape[1]
        lengths: np.ndarray | int
        if not failed and np.isfinite((fresh if everyone else fresh[ids]).sum()):
            ok, lengths = ids, h  # the usual case: all usable (a finite sum: all finite)
        else:
            ok, lengths = self._usable(ids, fresh, failed)
        if self.ensemble is not None:
            self._ensemble_add(ok, fresh, np.broadcast_to(lengths, ok.shape))
            return failed
        if self.chunk.shape[1] < h:
            grown = np.zeros((n, h, dim))
            grown[:, : self.chunk.shape[1]] = self.chunk
            self.chunk = grown
        if everyone and not failed:
            self.chunk[:, :h] = fresh
        else:
            self.chunk[ok, :h] = fresh[ok]
        self.pos[ok] = 0
        self.length[ok] = lengths if self.execute is None else np.minimum(self.execute, lengths)
        return failed

    def _usable(
        self, ids: np.ndarray, fresh: np.ndarray, failed: dict[int, str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Slots of `ids` whose chunks can run, and their lengths; records the others in
        `failed`. Trailing all-NaN rows pad a shorter chunk; any other NaN fails it."""
        h = fresh.shape[1]
        cand = np.array([i for i in ids if int(i) not in failed], dtype=np.int64)
        sub = fresh[cand]
        pad = np.all(np.isnan(sub), axis=2)[:, ::-1]  # (k, H), last row first
        lengths = h - np.where(pad.all(axis=1), h, np.argmin(pad, axis=1))
        inside = np.arange(h)[None, :, None] < lengths[:, None, None]
        usable = (lengths > 0) & np.all(np.isfinite(sub) | ~inside, axis=(1, 2))
        for i in cand[~usable]:
            failed[int(i)] = "invalid action: actions contain NaN or inf"
        return cand[usable], lengths[usable]

    def _ensemble_add(self, ids: np.ndarray, fresh: np.ndarray, lengths: np.ndarray) -> None:
        n, h, dim = fresh.shape
        if self.acc.shape[1] < h:
            acc, wsum = np.zeros((n, h, dim)), np.zeros((n, h))
            acc[:, : self.acc.shape[1]] = self.acc
            wsum[:, : self.wsum.shape[1]] = self.wsum
            self.acc, self.wsum = acc, wsum
        assert self.ensemble is not None
        w = np.exp(self.ensemble * np.arange(h))  # older predictions weigh more (ACT)
        for j, i in enumerate(ids):
            m = int(lengths[j])
            self.acc[i, :m] += w[:m, None] * fresh[i, :m]
            self.wsum[i, :m] += w[:m]
        self.pos[ids] = 0
        self.length[ids] = 1

    def _actions(self) -> tuple[np.ndarray, dict[int, str]]:
        """This step's canonical actions of every slot (idle slots hold still, settling
        slots hold still with the gripper open)."""
        action, failed = self._policy_actions()
        if self.settle_action is not None and self.settling.any():
            settle = self.settling > 0
            action[settle] = self.settle_action[settle]
        return action, failed

    def _policy_actions(self) -> tuple[np.ndarray, dict[int, str]]:
        if self.ensemble is not None:
            raw = self.acc[:, 0] / np.maximum(self.wsum[:, :1], 1e-12)
            self.acc = np.concatenate([self.acc[:, 1:], np.zeros_like(self.acc[:, :1])], 1)
            self.wsum = np.concatenate([self.wsum[:, 1:], np.zeros_like(self.wsum[:, :1])], 1)
        elif self.chunk.shape[1] == 1:
            raw = self.chunk[:, 0].copy()  # not a view: the next chunk overwrites it
        else:
            raw = self.chunk[self.all_slots, np.minimum(self.pos, self.chunk.shape[1] - 1)]
        self.raw = raw
        active = self.active
        if self.convert.identity and self.all_active:  # canonical actions, nobody idle
            return raw.copy(), {}
        kin = self.env.handler.kinematics()
        action = self.env.controller.hold_action(kin)  # idle slots hold still
        failed: dict[int, str] = {}
        if active.any():
            ids = np.flatnonzero(active)
            # converted against the robot's true state, as a real controller would
            state = self.env.robot_state(kin) if not self.convert.identity else {}
            pol = {k: v[ids] for k, v in state.items()}
            try:
                action[ids] = self.convert(raw[ids], pol)
            except ValueError as exc:
                failed = {int(i): f"invalid action: {exc}" for i in ids}
        return action, failed

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
                    seed=int(self.env.episode_seeds[slot]),
                    success=False,
                    progress=0.0,
                    steps=int(self.env.episode_steps[slot]),
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
            episodes = [int(self.episode_of[i]) for i in ids]
            self.obs, _ = self.env.reset(options=self._reset_options(ids, episodes))
            self.settling[ids] = self.settle_steps
            if self.on_start is not None:
                self.on_start(ids, np.asarray(episodes))
            self.policy.reset(self.instruction, ids)
            self.started[ids] = time.perf_counter()
            self.pos[ids] = self.length[ids]  # a fresh episode starts with a fresh chunk
            if self.acc.shape[1]:
                self.acc[ids] = 0.0
                self.wsum[ids] = 0.0
