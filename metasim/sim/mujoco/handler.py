"""Native MuJoCo backend: batched envs stepped on a thread pool with the GIL released.

Each env's full integration state (time, qpos, qvel, act, warmstart, ctrl, ...) lives in
one row of a (B, nstate) array (`host.py`, the host copy the warp backend shares). A worker
thread (the calling one is worker 0) owns one scratch MjData and steps the envs it takes
next: load the row (`mj_setState`), `mj_step(nstep=substeps)` (MuJoCo releases the GIL
inside), store the row, refresh kinematics and copy the poses into shared (B, ...)
buffers (one copy per run of them in the MjData: `poses.py`). One MjData per thread
keeps the working set in cache (as `mujoco.rollout` does; faster than round-robin over
per-env MjData: docs/log/backends.md) and memory flat in `num_envs`; the result is bitwise
the same as stepping each env continuously. What runs between the substeps (a host
controller, the legacy weld aref, the observation instant) is the step's schedule
(`schedule.py`), which every path reads: a step with an empty one (no contacts
reported, no per-env edit) runs inside MuJoCo's own batch (`batched.py`: no Python
between envs); a controller that runs for all envs at once steps them in lockstep.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import mujoco
import numpy as np

from metasim.scene.compile import CompiledScene
from metasim.sim.mujoco.batched import BatchStepper
from metasim.sim.mujoco.host import HostHandler
from metasim.sim.mujoco.legacy import legacy_aref_needed, legacy_equality_aref
from metasim.sim.mujoco.rows import SPEC, default_threads, state_layout
from metasim.sim.schedule import Schedule, schedule
from metasim.sim.state import SimState, Substep, geom_contacts


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
        self._substep: Substep | None = None
        # physics.equality_jdotv: false: step through mj_step1/2 (legacy_equality_aref)
        self._legacy_aref = legacy_aref_needed(compiled)
        self._batch: BatchStepper | None = None  # MuJoCo's batch (_stepper)
        self._plan = schedule(self.substeps, None, self._legacy_aref, False, False)
        # one MjData per env, for stepping all envs substep by substep (see _lockstep)
        self._env_data: list[mujoco.MjData] | None = None
        self._env_views: list[tuple[np.ndarray, ...]] = []
        self._env_pairs: list[tuple] = []
        self._scratch_views = [_views(d) for d in self._scratch]
        self._scratch_pairs = [self._pairs(d) for d in self._scratch]
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

    def _keep_observed(self, i: int, views: tuple[np.ndarray, ...]) -> None:
        """Copy env i's joint state and poses as the observed substep's mj_step left them."""
        for dst, src in zip(self._obs_buffers, views, strict=True):
            dst[i] = src

    def _run_ops(self, m: mujoco.MjModel, d: mujoco.MjData, i: int, tid: int) -> None:
        """Env i's control step in `d`: the schedule's operations (`schedule.py`)."""
        plan, substep = self._plan, self._substep
        for op, k in plan.ops:
            if op == "steps":
                mujoco.mj_step(m, d, nstep=k)
            elif op == "split":  # a host controller writes each substep's ctrl (osc_pose)
                mujoco.mj_step1(m, d)
                if plan.legacy_aref:
                    legacy_equality_aref(m, d)
                if substep is not None:
                    substep(i, k, m, d)
                mujoco.mj_step2(m, d)
            elif op == "mark":
                mujoco.mj_getState(m, d, self._obs_rows[i], SPEC)
            else:  # "keep"
                self._keep_observed(i, self._scratch_views[tid])

    def _work(self, envs: Iterator[int], tid: int) -> None:
        """Step envs taken one at a time from the shared iterator `envs` (taking the next
        index is atomic under the GIL), so threads stay busy when envs cost unequally."""
        d, pairs, state, ctrls = (
            self._scratch[tid],
            self._scratch_pairs[tid],
            self._state,
            self._ctrl,
        )
        ctrl = self._layout["ctrl"]
        model_for, run_ops, n, plan = (
            self._env_models.model_for,
            self._run_ops,
            self.substeps,
            self._plan,
        )
        for i in envs:
            m = model_for(i, tid)
            row = state[i]
            row[ctrl] = ctrls[i]
            mujoco.mj_setState(m, d, row, SPEC)
            if plan.empty:  # one mj_step call of all substeps: nothing runs between them
                mujoco.mj_step(m, d, nstep=n)
            else:
                run_ops(m, d, i, tid)
            mujoco.mj_getState(m, d, row, SPEC)
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
            self._refresh_from(i, m, d, self._scratch_pairs[tid])
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

    def _step(self, ctrl: np.ndarray) -> None:
        self._advance(ctrl, None)

    def _step_with(self, ctrl: np.ndarray, substep: Substep) -> None:
        self._advance(ctrl, substep)

    def _advance(self, ctrl: np.ndarray, substep: Substep | None) -> None:
        """One control step. Its schedule (`schedule.py`) says what runs between the
        substeps; the path: MuJoCo's batch when nothing does (no contacts reported, no env's
        model edited), the lockstep for a controller that runs for all envs at once, else
        the per-env loop on the thread pool."""
        plan = schedule(
            self.substeps,
            self.observe_substep,
            self._legacy_aref,
            substep is not None,
            self.track_contacts,
        )
        self._ctrl[:] = ctrl
        batch = getattr(substep, "batch", None)
        if batch is not None and self.num_envs > 1:
            try:
                self._lockstep(plan, batch)
            finally:
                self._env_models.restore()
            return
        if plan.empty and not plan.contacts and (stepper := self._stepper()) is not None:
            self._state[:, self._layout["ctrl"]] = self._ctrl
            stepper.step(self._state, self.substeps)
            return
        self._substep, self._plan = substep, plan
        try:
            self._run(self._work, range(self.num_envs))
        finally:
            self._substep = None

    def _stepper(self) -> BatchStepper | None:
        """MuJoCo's batch for a step with an empty schedule, of unedited envs (made on
        first use; batched.py)."""
        if self._env_models.edited:
            return None
        if self._batch is None:
            arrays = self._step_poses, self._pose_block.arrays, list(self._jac.items())
            self._batch = BatchStepper(self.model, self.num_envs, self.nthread, *arrays)
        return self._batch

    def _lockstep(self, plan: Schedule, batch: Callable[..., None]) -> None:
        """One control step of all envs together, substep by substep, each env in its own
        MjData (made on first use): the schedule's operations with mj_step1 of every env,
        the controller's `batch` for all at once, mj_step2 of every env for each substep:
        the same operations per env as stepping envs one at a time, the controller's math
        once per substep (it holds the GIL anyway)."""
        if self._env_data is None:
            self._env_data = [mujoco.MjData(self.model) for _ in range(self.num_envs)]
            self._env_views = [_views(d) for d in self._env_data]
            self._env_pairs = [self._pairs(d) for d in self._env_data]
        datas, model_for, base = self._env_data, self._env_models.model_for, self.model
        ctrl = self._layout["ctrl"]
        for i, d in enumerate(datas):  # (mj_setState, mj_getState: only the model's sizes)
            self._state[i, ctrl] = self._ctrl[i]
            mujoco.mj_setState(base, d, self._state[i], SPEC)
        # The controller reads only the model's tree (mj_jacSite, mj_fullM), which no
        # per-env edit changes: one model for all (with the last env's edits loaded).
        models = [model_for(0)] * len(datas)
        for op, k in plan.ops:  # (a controller's schedule splits every substep)
            if op == "split":
                for i, d in enumerate(datas):
                    m = model_for(i)
                    mujoco.mj_step1(m, d)
                    if plan.legacy_aref:
                        legacy_equality_aref(m, d)
                batch(k, models, datas)
                for i, d in enumerate(datas):
                    mujoco.mj_step2(model_for(i), d)
            elif op == "mark":  # the state the observed substep starts from
                for i, d in enumerate(datas):
                    mujoco.mj_getState(base, d, self._obs_rows[i], SPEC)
            elif op == "keep":
                for i in range(len(datas)):
                    self._keep_observed(i, self._env_views[i])
        for i, d in enumerate(datas):
            mujoco.mj_getState(base, d, self._state[i], SPEC)
            if plan.contacts:  # those of the last substep's collision pass
                self._contacts[i] = geom_contacts(d)
            for dst, src in self._env_pairs[i][0]:  # the poses as mj_step left them
                dst[i] = src
            self._refresh_from(i, model_for(i), d, self._env_pairs[i])

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
