"""The common part of every adapter to an outside policy (server, checkpoint, object).

An adapter turns the env's observation batch into the requests its policy takes (the
declared `observation:` spec), gets an action chunk back per env (one batched call when
the policy accepts a batch, else one call per env in parallel), checks the chunk
against the declared action convention and fails only the envs whose call failed after
the configured retries. Every remote call has a timeout.

The instruction sent is the scene's (as a language factor rephrases it), or what
`task_text: "module:function"` makes of it: a function (scene, instruction) -> str, e.g.
the descriptions LeRobot's Meta-World env gives (`metasim.metaworld.lerobot_tasks:
lerobot_task_text`) or a LIBERO task's BDDL `:language` text
(`metasim.libero.importer.language:bddl_task_text`).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import numpy as np
from pydantic import Field

from metasim.errors import MetasimInputError
from metasim.policies.base import (
    PolicyContext,
    PolicyFailure,
    PolicyOptions,
    code_field,
)
from metasim.policies.observation import scene_payload
from metasim.scene.schema import Scene


class AdapterOptions(PolicyOptions):
    """Options every adapter kind shares (`policy.<name>` on the command line)."""

    timeout_s: float = Field(default=30.0, gt=0)  # every call to the policy
    retries: int = Field(default=1, ge=0)  # retries of a failed call (reconnecting first)
    retry_backoff_s: float = Field(default=0.2, ge=0)
    max_workers: int = Field(default=16, ge=1)  # parallel calls when fanning out
    # Actions wider than the declared convention: refused, or cut to their first D dims
    # (openpi's LIBERO client keeps actions[:, :7] of a padded output).
    extra_dims: Literal["refuse", "drop"] = "refuse"
    task_text: str | None = code_field(default=None, pattern=r"^[\w.]+:\w+$")
    """`module:function` (scene, instruction) -> the instruction sent (default: the
    instruction itself)."""


TaskText = Callable[[Scene, str], str]


def load_task_text(ref: str | None) -> TaskText | None:
    """The function `module:function` names, or an input error naming policy.task_text."""
    if ref is None:
        return None
    module, _, name = ref.partition(":")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise MetasimInputError(
            "policy.task_text", [f"{ref!r}: expected module:function, {exc}"]
        ) from None
    if not callable(fn):
        raise MetasimInputError("policy.task_text", [f"{ref!r} is not a function"])
    return fn


class CallError(Exception):
    """One env's call failed for a stated reason (after retries)."""


class AdapterPolicy:
    """Base class: subclasses implement `infer_one` and/or `infer_batch`, and may
    override `reset_env`, `recover` (after a failed call) and `close`."""

    batched = False  # True: infer_batch takes every env at once
    device_images = False  # True: images may be torch tensors on the device (batched)
    action_space: str

    def __init__(self, ctx: PolicyContext, opts: AdapterOptions) -> None:
        self.ctx, self.opts = ctx, opts
        self.action_space = opts.actions.env_space
        self.n_arm = len(ctx.compiled.index.arm_qpos)
        self.dim = opts.actions.dim(self.n_arm)
        self.task_text = load_task_text(opts.task_text)
        self.instruction = self._task(ctx.compiled.scene.task.instruction)
        self.fresh = np.ones(ctx.num_envs, dtype=bool)  # episode starts with the next call
        self.scene_text = scene_payload(ctx.compiled) if opts.observation.raw else ""
        self._pool: ThreadPoolExecutor | None = None
        try:
            self.views = opts.observation.views(ctx.compiled)  # what the env must render
        except ValueError as exc:
            raise MetasimInputError("policy config", [f"policy.{exc}"]) from None

    # ------------------------------------------------------------ to implement

    def infer_one(self, env: int, request: dict[str, Any]) -> np.ndarray:
        """(H, D) actions for one env's request."""
        raise NotImplementedError

    def infer_batch(self, env_ids: np.ndarray, batch: dict[str, Any]) -> np.ndarray:
        """(len(env_ids), H, D) actions for a batch request."""
        raise NotImplementedError

    def reset_env(self, env: int) -> None:
        """A new episode starts in env `env` (a stateful policy forgets the last one)."""

    def recover(self, env: int) -> None:
        """Called before retrying a failed call (e.g. reconnect)."""

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------ policy protocol

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None:
        self.instruction = self._task(instruction)
        ids = np.arange(self.ctx.num_envs) if env_ids is None else np.asarray(env_ids)
        for i in ids:
            self.fresh[int(i)] = True
            self.reset_env(int(i))

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        ids = np.arange(self.ctx.num_envs) if env_ids is None else np.asarray(env_ids)
        spec = self.opts.observation
        failed: dict[int, str] = {}
        results: dict[int, np.ndarray] = {}
        if self.batched:
            batch = spec.batch(obs, ids, self.instruction, self.ctx.compiled)
            try:
                chunks = self._with_retries(
                    lambda: self._check(self.infer_batch(ids, batch), len(ids)), int(ids[0])
                )
                results = {int(i): chunks[j] for j, i in enumerate(ids)}
            except CallError as exc:
                failed = {int(i): str(exc) for i in ids}
        else:
            reqs = spec.requests(obs, ids, self.instruction, self.ctx.compiled)
            for i, req in zip(ids, reqs, strict=True):
                if spec.raw and self.fresh[int(i)]:  # metasim's own policies: the scene
                    req["metasim/reset"] = True
                    req["metasim/scene"] = self.scene_text
            self.fresh[ids] = False
            if self._pool is None:
                self._pool = ThreadPoolExecutor(min(self.opts.max_workers, self.ctx.num_envs))
            futures = {
                int(i): self._pool.submit(self._one, int(i), req)
                for i, req in zip(ids, reqs, strict=True)
            }
            for i, fut in futures.items():
                try:
                    results[i] = fut.result()
                except CallError as exc:
                    failed[i] = str(exc)
        h = max((r.shape[0] for r in results.values()), default=1)
        chunk = np.full((self.ctx.num_envs, h, self.dim), np.nan)
        for i, r in results.items():
            chunk[i, : r.shape[0]] = r
        if failed:
            raise PolicyFailure(chunk, failed)
        return chunk

    # ------------------------------------------------------------ helpers

    def _task(self, instruction: str) -> str:
        """The instruction as sent (rewritten by `task_text` when one is set)."""
        if self.task_text is None:
            return instruction
        return self.task_text(self.ctx.compiled.scene, instruction)

    def _one(self, env: int, request: dict[str, Any]) -> np.ndarray:
        return self._with_retries(lambda: self._check(self.infer_one(env, request)), env)

    def _with_retries(self, call: Any, env: int) -> np.ndarray:
        reason = ""
        for attempt in range(self.opts.retries + 1):
            if attempt:
                time.sleep(self.opts.retry_backoff_s * attempt)
                try:
                    self.recover(env)
                except Exception as exc:
                    reason = f"{reason}; reconnect failed: {type(exc).__name__}: {exc}"
                    continue
            try:
                return np.asarray(call())
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}"
        tries = self.opts.retries + 1
        raise CallError(f"{reason} (after {tries} attempt{'s' * (tries > 1)})")

    def _check(self, actions: Any, batch: int | None = None) -> np.ndarray:
        """Actions of one env (H, D), or of a batch (B, H, D), checked and as float64."""
        a = np.asarray(actions)
        if a.dtype.kind not in "fiu":
            raise ValueError(f"actions have dtype {a.dtype}, expected numbers")
        a = a.astype(np.float64)
        if batch is None and a.ndim == 1:
            a = a[None]  # one action, no chunk (OpenVLA)
        want = 2 if batch is None else 3
        if a.ndim != want:
            raise ValueError(f"actions have shape {a.shape}, expected {want} dimensions")
        if batch is not None and a.shape[0] != batch:
            raise ValueError(f"actions for {a.shape[0]} envs, expected {batch}")
        if self.opts.extra_dims == "drop" and a.shape[-1] > self.dim:
            a = a[..., : self.dim]
        if a.shape[-1] != self.dim:
            raise ValueError(
                f"actions are {a.shape[-1]}-D, the declared convention is "
                f"{self.opts.actions.describe(self.n_arm)}"
            )
        if not np.all(np.isfinite(a)):
            raise ValueError("actions contain NaN or inf")
        return a
