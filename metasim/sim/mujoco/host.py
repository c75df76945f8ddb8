"""What the native and the warp handler share: the batch's host copy.

Each env's full integration state (time, qpos, qvel, act, warmstart, ctrl, ...) is one
row of a (B, nstate) array (`rows.py`; the batch's qpos and qvel are views of it), beside
(B, ...) buffers of the poses the env reads: after the step, as the last substep's
mj_step left them (`kinematics(at="step")`), and at the observation instant. The native
backend steps the rows themselves; the warp backend steps on its device and copies its
state into them after each step. Both render with MuJoCo's renderer from the rows, with
each env's model edits loaded into the scene's model (`env_models.py`).
"""

from __future__ import annotations

import mujoco
import numpy as np

from metasim.scene.compile import CompiledScene
from metasim.sim.base import Handler
from metasim.sim.mujoco.env_models import EnvModels
from metasim.sim.mujoco.poses import PoseBuffers
from metasim.sim.mujoco.rows import SPEC, state_layout
from metasim.sim.state import Instant, Kinematics, SimState


class HostHandler(Handler):
    """`num_envs` flat state rows over one MjModel and the kinematics read from them;
    per-env model edits are loaded into one worker model per thread (`nthread` of them,
    each with its scratch MjData), never a copy per env. A subclass steps the rows and
    resets every env at the end of its constructor."""

    supports_observe_substep = True

    def __init__(self, compiled: CompiledScene, num_envs: int, nthread: int) -> None:
        super().__init__(compiled, num_envs)
        m, b = self.model, num_envs
        self.nthread = nthread
        self._env_models = EnvModels(m, compiled.spec, num_envs, nthread)
        self._scratch = [mujoco.MjData(m) for _ in range(nthread)]
        self._layout = state_layout(m)
        blank = np.zeros(mujoco.mj_stateSize(m, SPEC))
        mujoco.mj_resetData(m, self._scratch[0])
        mujoco.mj_getState(m, self._scratch[0], blank, SPEC)
        self._blank = blank  # eq_active, userdata and the rest as the model defines them
        self._state = np.tile(blank, (b, 1))
        self.jacobian_sites: tuple[int, ...] = (compiled.index.ee_site,)
        self._qpos = self._state[:, self._layout["qpos"]]  # views: the state rows hold them
        self._qvel = self._state[:, self._layout["qvel"]]
        self._pose_block = PoseBuffers(self._scratch[0], b)  # one copy per MjData run
        poses = self._pose_block.arrays
        self._jac = {s: np.zeros((b, 6, m.nv)) for s in self.jacobian_sites}
        self._ctrl = np.zeros((b, m.nu))
        self._contacts = [np.zeros((0, 2), dtype=np.int64)] * b
        self._batch_buffers: tuple[np.ndarray, ...] = (self._qpos, self._qvel, *poses)
        self._forward_kinematics = self._kinematics_of(self._batch_buffers)
        # The poses mj_step leaves (those of the state its last substep started from, the
        # state of its contacts), kept for the success check (`kinematics(at="step")`).
        self._step_block = PoseBuffers(self._scratch[0], b)
        self._step_poses = self._step_block.arrays
        self._step_kinematics = self._kinematics_of((self._qpos, self._qvel, *self._step_poses))
        # The observation instant's copies (the scene's `task.observe_substep`): the state
        # row the observed substep started from (rendered from) and the joint state and
        # poses mj_step left after it (buffers in `_batch_buffers`' order); after a reset,
        # the reset state's.
        on = self.observe_substep is not None
        self._obs_rows = self._state.copy() if on else self._state[:0].copy()
        self._obs_buffers = tuple(a.copy() for a in self._batch_buffers) if on else ()
        obs = self._kinematics_of(self._obs_buffers) if on else self._forward_kinematics
        # `kinematics(at)`'s views: after the step, as mj_step left them, observed
        self._instants = {"forward": self._forward_kinematics, "step": self._step_kinematics}
        self._instants["observed"] = obs

    def _kinematics_of(self, buffers: tuple[np.ndarray, ...]) -> Kinematics:
        """A `Kinematics` of views of (qpos, qvel, body pos, body quat, site pos, site mat)."""
        qpos, qvel, pos, quat, site_pos, site_mat = buffers
        site_mat = site_mat.reshape(self.num_envs, -1, 3, 3)
        return Kinematics(qpos, qvel, pos, quat, site_pos, site_mat)

    # ------------------------------------------------------------ state

    def _rows_of(self, state: SimState, n: int) -> np.ndarray:
        """(n, nstate) flat rows holding the batch `state` of n envs."""
        rows = np.tile(self._blank, (n, 1))
        for name, cols in self._layout.items():
            rows[:, cols] = np.asarray(getattr(state, name)).reshape(n, -1)
        return rows

    def _get_state(self) -> SimState:
        s, lay, b, m = self._state, self._layout, self.num_envs, self.model
        return SimState(
            time=s[:, lay["time"]][:, 0].copy(),
            qpos=s[:, lay["qpos"]].copy(),
            qvel=s[:, lay["qvel"]].copy(),
            act=s[:, lay["act"]].copy(),
            ctrl=s[:, lay["ctrl"]].copy(),
            qacc_warmstart=s[:, lay["qacc_warmstart"]].copy(),
            mocap_pos=s[:, lay["mocap_pos"]].reshape(b, m.nmocap, 3).copy(),
            mocap_quat=s[:, lay["mocap_quat"]].reshape(b, m.nmocap, 4).copy(),
        )

    def _mocap_columns(self, field: str, ids: np.ndarray, width: int) -> np.ndarray:
        """Columns (k * width,) of the flat state rows that hold `field` of mocap `ids`."""
        start = self._layout[field].start
        return (start + width * ids[:, None] + np.arange(width)).ravel()

    def _set_mocap(self, ids: np.ndarray, pos: np.ndarray, quat: np.ndarray | None) -> None:
        """Write the targets into every env's state row (one vectorised write; the step
        loads the rows before the substeps)."""
        b = self.num_envs
        self._state[:, self._mocap_columns("mocap_pos", ids, 3)] = pos.reshape(b, -1)
        if quat is not None:
            self._state[:, self._mocap_columns("mocap_quat", ids, 4)] = quat.reshape(b, -1)

    def contacts(self) -> list[np.ndarray]:
        if not self.track_contacts:
            raise ValueError("contacts are reported only with track_contacts set")
        return list(self._contacts)

    def _kinematics(self, at: Instant) -> Kinematics:
        return self._instants[at]  # views of the buffers, which steps update in place

    def site_jacobian(self, site: int) -> np.ndarray:
        if site in self._jac:
            return self._jac[site]
        out, d = np.zeros((self.num_envs, 6, self.model.nv)), self._scratch[0]
        for i in range(self.num_envs):
            m = self._env_models.model_for(i)
            mujoco.mj_setState(m, d, self._state[i], SPEC)
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_jacSite(m, d, out[i, :3], out[i, 3:], site)
        self._env_models.restore()
        return out

    # ------------------------------------------------------------ model edits, rendering

    def _apply(self, field: str, index: int, values: np.ndarray) -> None:
        self._env_models.set(field, index, values)

    def model_values(self, field: str, index: int) -> np.ndarray | None:
        """(B, ...) each env's values of a model row edited per env (None: not edited)."""
        return self._env_models.values(field, 0 if field == "gravity" else index)

    def _rendered(self) -> None:  # (each env's frame drew on the scene's model, its edits in)
        self._env_models.restore()

    def _render_data(
        self, env: int, observed: bool = False
    ) -> tuple[mujoco.MjModel, mujoco.MjData]:
        m, d = self._env_models.model_for(env), self._scratch[0]
        rows = self._obs_rows if observed and self._obs_buffers else self._state
        mujoco.mj_setState(m, d, rows[env], SPEC)
        mujoco.mj_kinematics(m, d)
        return m, d


__all__ = ["HostHandler"]
