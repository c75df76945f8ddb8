"""Native MuJoCo backend: batched envs stepped through one substep schedule, two ways.

Each env's full integration state (time, qpos, qvel, act, warmstart, ctrl, ...) lives in
one row of a (B, nstate) array (`host.py`, the host copy the warp backend shares). What
runs between a control step's physics substeps (a host controller, the legacy weld aref,
the observation instant) and whether the step reports contacts is its schedule
(`metasim.sim.schedule`), computed once when the handler is built, for each kind of step
(with or without a host controller, contacts reported or not), from the scene's
`task.observe_substep` and `physics.equality_jdotv`. Two paths read it:

- an empty schedule, no env's model edited: MuJoCo's own batch (`batched.py`), one
  `mj_step` of every substep per env with no Python between envs;
- otherwise lockstep (`_lockstep`): a group of envs runs the schedule's operations
  together, each op for every env of the group before the next, then each env's row is
  stored, its contacts and the poses mj_step left are kept and its kinematics refreshed
  into the shared (B, ...) buffers (one copy per run of them in the MjData: `poses.py`).
  A controller that runs for all envs at once (`batch`, its math once per substep) makes
  one group of every env (of two or more), each in its own MjData; otherwise each env is
  a group of its own, loaded (`mj_setState`) into the scratch MjData of the worker thread
  that takes it next (the calling thread is worker 0; MuJoCo releases the GIL inside).
  One MjData per thread keeps the working set in cache (as `mujoco.rollout` does:
  docs/log/backends.md) and memory flat in `num_envs`.

Every env sees the same MuJoCo calls in the same order on either path: bitwise the same
as stepping each env continuously.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import mujoco
import numpy as np

from metasim.scene.compile import CompiledScene
from metasim.sim.mujoco.batched import BatchStepper
from metasim.sim.mujoco.host import HostHandler
from metasim.sim.mujoco.legacy import legacy_aref_needed, legacy_equality_aref
from metasim.sim.mujoco.rows import SPEC, default_threads, state_layout
from metasim.sim.schedule import Schedule, schedule
from metasim.sim.state import SimState, Substep, geom_contacts

# An MjData an env steps in, with its arrays in the batch buffers' order (`_views`) and
# its pose pairs (`_pairs`), made once per MjData.
Slot = tuple[mujoco.MjData, tuple[np.ndarray, ...], tuple[tuple, tuple]]
_BOTH = (False, True)


def _views(d: mujoco.MjData) -> tuple[np.ndarray, ...]:
    """The arrays of `d` copied into the batch buffers, in their order (made once)."""
    return (d.qpos, d.qvel, d.xpos, d.xquat, d.site_xpos, d.site_xmat)


class BackendHandler(HostHandler):
    """`num_envs` flat states over one MjModel, stepped on `nthread` threads (the host
    copy `HostHandler` holds is the state itself)."""

    supports_substep = True

    def __init__(self, compiled: CompiledScene, num_envs: int, nthread: int | None = None) -> None:
        threads = max(1, min(nthread or default_threads(), num_envs))
        super().__init__(compiled, num_envs, threads)
        self._pool = ThreadPoolExecutor(self.nthread - 1) if self.nthread > 1 else None
        # the schedule of each kind of step: (host controller, contacts reported) -> it
        fixed = (self.substeps, self.observe_substep, legacy_aref_needed(compiled))
        self._schedules = {(c, t): schedule(*fixed, c, t) for c in _BOTH for t in _BOTH}
        self._batch: BatchStepper | None = None  # MuJoCo's batch (_stepper)
        # one MjData per env, for a group of every env (made on first use)
        self._env_group: list[Slot] = []
        self._scratch_slots = [(d, _views(d), self._pairs(d)) for d in self._scratch]
        self._jacs = [(site, [(j[:3], j[3:]) for j in jac]) for site, jac in self._jac.items()]
        self.reset(np.arange(num_envs), self.default_state(num_envs))

    # ------------------------------------------------------------ stepping

    def _pairs(self, d: mujoco.MjData) -> tuple[tuple, tuple]:
        """(step poses, refreshed poses) (destination block, source span of `d`) pairs
        (made once: building them is most of the cost of a copy this small)."""
        step = tuple(zip(self._step_block.blocks, self._step_block.sources(d), strict=True))
        return step, tuple(zip(self._pose_block.blocks, self._pose_block.sources(d), strict=True))

    def _refresh_from(self, i: int, m: mujoco.MjModel, d: mujoco.MjData, pairs: tuple) -> None:
        """Kinematics of env i (loaded in `d`) copied into the batch buffers (qpos and qvel
        are views of the state rows: nothing to copy)."""
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        for dst, src in pairs[1]:
            dst[i] = src
        for site, rows in self._jacs:
            mujoco.mj_jacSite(m, d, *rows[i], site)

    def _step(self, ctrl: np.ndarray) -> None:
        self._advance(ctrl, None)

    def _step_with(self, ctrl: np.ndarray, substep: Substep) -> None:
        self._advance(ctrl, substep)

    def _advance(self, ctrl: np.ndarray, substep: Substep | None) -> None:
        """One control step: MuJoCo's batch for an empty schedule of unedited envs, else
        lockstep, in one group of every env for a controller with `batch` (see the module)."""
        plan = self._schedules[(substep is not None, self.track_contacts)]
        self._ctrl[:] = ctrl
        if plan.empty and (stepper := self._stepper()) is not None:
            self._state[:, self._layout["ctrl"]] = self._ctrl
            stepper.step(self._state, self.substeps)
            return
        batch = getattr(substep, "batch", None)
        if batch is None or self.num_envs == 1:
            self._run(partial(self._each_alone, plan, substep), range(self.num_envs))
            return
        if not self._env_group:
            datas = [mujoco.MjData(self.model) for _ in range(self.num_envs)]
            self._env_group = [(d, _views(d), self._pairs(d)) for d in datas]
        try:
            self._lockstep(plan, list(enumerate(self._env_group)), 0, substep, batch)
        finally:
            self._env_models.restore()

    def _each_alone(
        self, plan: Schedule, substep: Substep | None, envs: Iterator[int], tid: int
    ) -> None:
        """Envs taken one at a time from the shared iterator `envs` (taking the next index
        is atomic under the GIL, so threads stay busy when envs cost unequally), each a
        group of its own in thread `tid`'s scratch MjData."""
        slot = self._scratch_slots[tid]
        for i in envs:
            self._lockstep(plan, [(i, slot)], tid, substep, None)

    def _lockstep(
        self,
        plan: Schedule,
        group: list[tuple[int, Slot]],
        tid: int,
        substep: Substep | None,
        batch: Callable[..., None] | None,
    ) -> None:
        """One control step of the envs of `group` ((env, (its MjData, its views, its pose
        pairs)) each) together, on thread `tid`: the schedule's operations (`schedule.py`),
        each for every env before the next; at a split substep the controller writes the
        ctrl between mj_step1 and mj_step2, `batch` for the whole group at once, else
        `substep` env by env."""
        model_for, rows, obs, ctrl = (
            self._env_models.model_for,
            self._state,
            self._obs_rows,
            self._layout["ctrl"],
        )
        for i, (d, _, _) in group:
            rows[i, ctrl] = self._ctrl[i]
            mujoco.mj_setState(model_for(i, tid), d, rows[i], SPEC)
        # The controller reads only the model's tree (mj_jacSite, mj_fullM), which no
        # per-env edit changes: one model for all (with the last env's edits loaded).
        models = [model_for(group[0][0], tid)] * len(group)
        datas = [d for _, (d, _, _) in group]
        for op, k in plan.ops:
            if op == "steps":  # one call: nothing runs between these substeps
                for i, (d, _, _) in group:
                    mujoco.mj_step(model_for(i, tid), d, nstep=k)
            elif op == "split":
                for i, (d, _, _) in group:
                    m = model_for(i, tid)
                    mujoco.mj_step1(m, d)
                    if plan.legacy_aref:
                        legacy_equality_aref(m, d)
                    if substep is not None and batch is None:
                        substep(i, k, m, d)
                if batch is not None:
                    batch(k, models, datas)
                for i, (d, _, _) in group:
                    mujoco.mj_step2(model_for(i, tid), d)
            elif op == "mark":  # the state the observed substep starts from
                for i, (d, _, _) in group:
                    mujoco.mj_getState(model_for(i, tid), d, obs[i], SPEC)
            else:  # "keep": its joint state and poses as its mj_step left them
                for i, (_, views, _) in group:
                    for dst, src in zip(self._obs_buffers, views, strict=True):
                        dst[i] = src
        for i, (d, _, pairs) in group:
            m = model_for(i, tid)
            mujoco.mj_getState(m, d, rows[i], SPEC)
            if plan.contacts:  # those of the last substep's collision pass
                self._contacts[i] = geom_contacts(d)
            for dst, src in pairs[0]:  # the poses as mj_step left them, before the refresh
                dst[i] = src
            self._refresh_from(i, m, d, pairs)

    def _load(self, envs: Iterator[int], tid: int) -> None:
        d = self._scratch[tid]
        for i in envs:
            m = self._env_models.model_for(i, tid)
            mujoco.mj_setState(m, d, self._state[i], SPEC)
            if self.track_contacts:
                mujoco.mj_forward(m, d)
                self._contacts[i] = geom_contacts(d)
            self._refresh_from(i, m, d, self._scratch_slots[tid][2])
            for dst, src in zip(self._step_poses, self._batch_buffers[2:], strict=True):
                dst[i] = src[i]  # the loaded state's own
            if self._obs_buffers:  # the observation instant: the loaded state's own too
                self._obs_rows[i] = self._state[i]
                for dst, src in zip(self._obs_buffers, self._batch_buffers, strict=True):
                    dst[i] = src[i]

    def _run(self, fn: Callable[[Iterator[int], int], None], env_ids: Sequence[int]) -> None:
        envs = iter(env_ids)
        try:
            if self._pool is not None:
                self._env_models.ready()
            pool = self._pool  # the calling thread is worker 0 (no hand-off to wait for)
            futures = [pool.submit(fn, envs, t) for t in range(1, self.nthread)] if pool else []
            try:
                fn(envs, 0)
            finally:
                for f in futures:
                    f.result()
        finally:  # the scene's model as compiled again (thread 0 loaded envs' edits in it)
            self._env_models.restore()

    def _stepper(self) -> BatchStepper | None:
        """MuJoCo's batch for a step with an empty schedule, of unedited envs (made on
        first use; batched.py)."""
        if self._env_models.edited:
            return None
        if self._batch is None:
            arrays = self._step_poses, self._pose_block.arrays, list(self._jac.items())
            self._batch = BatchStepper(self.model, self.num_envs, self.nthread, *arrays)
        return self._batch

    # ------------------------------------------------------------ state

    def _reset(self, env_ids: np.ndarray, state: SimState) -> None:
        self._state[env_ids] = self._rows_of(state, len(env_ids))
        self._ctrl[env_ids] = state.ctrl
        ids = [int(i) for i in env_ids]
        if not self._env_models.edited:
            self._run(self._load, ids)
            return
        try:  # on thread 0 alone: loading states needs no twin model (made only to step)
            self._load(iter(ids), 0)
        finally:
            self._env_models.restore()

    def close(self) -> None:
        self._batch = None  # (its threads go with it)
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
        super().close()


__all__ = ["SPEC", "BackendHandler", "default_threads", "state_layout"]
