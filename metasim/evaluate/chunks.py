"""The chunk queue: a policy's action chunks executed per env slot.

The policy maps an observation batch to (B, H, D) chunks in its declared convention. Each
slot executes `execute` actions of its chunk (or all of it) before the policy is asked
again for that slot, or, with `ensemble`, the policy is asked every step and the slot
executes the weighted mean of every prediction made for the current step (ACT's temporal
ensembling, weight exp(ensemble * age): older predictions weigh more).

A chunk shorter than H for some slot is padded with rows that are all NaN; any other
NaN or inf, a wrong shape, a policy error or a `PolicyFailure` fails the slots it was
for, with the reason (what the loop records).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metasim.policies.base import Policy, PolicyFailure
from metasim.policies.conventions import ActionConverter


class ChunkQueue:
    """The chunks of `num_envs` slots driven by `policy` (actions of `convert.dim`)."""

    def __init__(
        self,
        policy: Policy,
        num_envs: int,
        convert: ActionConverter,
        execute: int | None = None,
        ensemble: float | None = None,
    ) -> None:
        self.policy, self.convert = policy, convert
        self.execute, self.ensemble = execute, ensemble
        n, dim = num_envs, convert.dim
        self.all_slots = np.arange(n)
        self.chunk = np.zeros((n, 1, dim))
        self.pos = np.zeros(n, dtype=np.int64)  # next action of each slot's chunk
        self.length = np.zeros(n, dtype=np.int64)  # actions to execute from each chunk
        # ensembling: weighted sums of the predictions for steps t, t+1, ...
        self.acc: np.ndarray = np.zeros((n, 0, dim))
        self.wsum: np.ndarray = np.zeros((n, 0))

    def start(self, instruction: str, ids: np.ndarray | None = None) -> None:
        """Slots `ids` (None: all, the run's first start) start episodes: the policy is
        reset for them and their next action comes from a fresh chunk."""
        if ids is None:
            self.policy.reset(instruction)
            ids = self.all_slots
        else:
            self.policy.reset(instruction, ids)
        self.pos[ids] = self.length[ids]
        if self.acc.shape[1]:
            self.acc[ids] = 0.0
            self.wsum[ids] = 0.0

    def refill(self, obs: dict[str, Any], active: np.ndarray) -> dict[int, str]:
        """Ask the policy for chunks for the `active` (B,) slots that need one; the slots
        that got none, with why."""
        every = bool(active.all())
        need = active if self.ensemble is not None else (self.pos >= self.length) & active
        everyone = every and bool(need.all())  # (one env: the usual case)
        if not everyone and not need.any():
            return {}
        ids = self.all_slots if everyone else np.flatnonzero(need)
        failed: dict[int, str] = {}
        try:
            fresh = np.asarray(self.policy.act(obs, ids), dtype=np.float64)
        except PolicyFailure as exc:
            fresh = np.asarray(exc.chunk, dtype=np.float64)
            failed = {int(i): f"policy error: {r}" for i, r in exc.failed.items()}
        except Exception as exc:
            return {int(i): f"policy error: {type(exc).__name__}: {exc}" for i in ids}
        n, dim = len(self.all_slots), self.convert.dim
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
            ok, lengths = usable_chunks(ids, fresh, failed)
        if self.ensemble is not None:
            self._ensemble_add(ok, fresh, np.broadcast_to(lengths, ok.shape))
        else:
            self._store(ok, fresh, lengths, everyone and not failed)
        return failed

    def _store(
        self, ok: np.ndarray, fresh: np.ndarray, lengths: np.ndarray | int, whole: bool
    ) -> None:
        """Slots `ok` execute their rows of `fresh` (B, H, D) from the first action on."""
        n, h, dim = fresh.shape
        if self.chunk.shape[1] < h:
            grown = np.zeros((n, h, dim))
            grown[:, : self.chunk.shape[1]] = self.chunk
            self.chunk = grown
        if whole:
            self.chunk[:, :h] = fresh
        else:
            self.chunk[ok, :h] = fresh[ok]
        self.pos[ok] = 0
        self.length[ok] = lengths if self.execute is None else np.minimum(self.execute, lengths)

    def _ensemble_add(self, ids: np.ndarray, fresh: np.ndarray, lengths: np.ndarray) -> None:
        """Add the predictions `fresh` (B, H, D) of slots `ids` to their weighted sums."""
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

    def actions(self) -> np.ndarray:
        """(B, D) this step's action of every slot in the policy's convention (a slot
        without a chunk yet: zeros). Call `advance` once the step ran."""
        if self.ensemble is not None:
            if not self.acc.shape[1]:  # no prediction yet (every slot settling)
                return np.zeros((len(self.all_slots), self.convert.dim))
            raw = self.acc[:, 0] / np.maximum(self.wsum[:, :1], 1e-12)
            self.acc = np.concatenate([self.acc[:, 1:], np.zeros_like(self.acc[:, :1])], 1)
            self.wsum = np.concatenate([self.wsum[:, 1:], np.zeros_like(self.wsum[:, :1])], 1)
            return raw
        if self.chunk.shape[1] == 1:
            return self.chunk[:, 0].copy()  # not a view: the next chunk overwrites it
        return self.chunk[self.all_slots, np.minimum(self.pos, self.chunk.shape[1] - 1)]

    def advance(self, acted: np.ndarray) -> None:
        """The slots `acted` (B,) bool executed this step's action: on to the next."""
        self.pos[acted] += 1


def usable_chunks(
    ids: np.ndarray, fresh: np.ndarray, failed: dict[int, str]
) -> tuple[np.ndarray, np.ndarray]:
    """Slots of `ids` whose chunks in `fresh` (B, H, D) can run, and their lengths;
    records the others in `failed`. Trailing all-NaN rows pad a shorter chunk; any other
    NaN fails it."""
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
