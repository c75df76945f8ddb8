"""MuJoCo Warp backend handler: `num_envs` worlds of one `mujoco_warp.Data`, stepped by
MuJoCo Warp's kernels on a Warp device (the CPU, or CUDA when Warp sees a GPU).

The physics runs in MuJoCo Warp (float32). The handler API around it is the native
backend's: the host keeps each env's flat `mjSTATE_INTEGRATION` row (read back from the
device after every control step) and computes the observables (kinematics, site
Jacobians) and camera images from it with native MuJoCo, so what the env reads is
derived exactly as on the native backend. Mocap targets (`set_mocap`) go into the
host rows and, at once, into every world's mocap arrays on the device. Per-env model
edits are not supported yet.
"""

from __future__ import annotations

import mujoco
import mujoco_warp as mjw
import numpy as np
import warp as wp

from metasim.scene.compile import CompiledScene
from metasim.sim.base import SimState, UnsupportedScene
from metasim.sim.mujoco.handler import BackendHandler as NativeHandler
from metasim.sim.mujoco.handler import legacy_aref_needed
from metasim.sim.warp import batch
from metasim.sim.warp.support import pick_device, put_model


class BackendHandler(NativeHandler):
    """Batched MuJoCo Warp envs. Options: `device` (a Warp device name, default CUDA if
    present else "cpu"); `nthread` threads for the host-side kinematics (as natively)."""

    def __init__(
        self,
        compiled: CompiledScene,
        num_envs: int,
        device: str | None = None,
        nthread: int | None = None,
    ) -> None:
        self.device = pick_device(device)
        model = compiled.model
        if legacy_aref_needed(compiled):
            raise UnsupportedScene(
                f"scene {compiled.scene.name!r} sets physics.equality_jdotv: false, but "
                "MuJoCo Warp always subtracts J̇v from connect and weld constraint rows "
                "(as MuJoCo >= 3.7 does); run it on backend=mujoco or mjx"
            )
        with wp.ScopedDevice(self.device):
            self._wm = put_model(model, compiled.scene.name)
            self._wd = mjw.put_data(model, mujoco.MjData(model), nworld=num_envs)
        self._nstate = mujoco.mj_stateSize(model, batch.SPEC)
        super().__init__(compiled, num_envs, nthread=nthread)  # resets every env

    def _step(self, ctrl: np.ndarray) -> None:
        self._ctrl[:] = ctrl
        with wp.ScopedDevice(self.device):
            self._wd.ctrl.assign(ctrl.astype(np.float32))
            for _ in range(self.substeps):
                mjw.step(self._wm, self._wd)
            self._state[:] = batch.read_state(self._wm, self._wd, self._nstate, self.num_envs)
        self._run(self._load, range(self.num_envs))  # host kinematics from the new rows

    def _set_mocap(self, ids: np.ndarray, pos: np.ndarray, quat: np.ndarray | None) -> None:
        """Write the targets into the host rows (as natively), then every world's mocap
        arrays on the device (float32) from those rows."""
        super()._set_mocap(ids, pos, quat)
        b, n, lay = self.num_envs, self.model.nmocap, self._layout
        with wp.ScopedDevice(self.device):
            rows = self._state[:, lay["mocap_pos"]].reshape(b, n, 3)
            self._wd.mocap_pos.assign(rows.astype(np.float32))
            if quat is not None:
                rows = self._state[:, lay["mocap_quat"]].reshape(b, n, 4)
                self._wd.mocap_quat.assign(rows.astype(np.float32))

    def _reset(self, env_ids: np.ndarray, state: SimState) -> None:
        super()._reset(env_ids, state)  # host rows and kinematics
        if not hasattr(self, "_wd"):
            return
        active = np.zeros(self.num_envs, dtype=bool)
        active[env_ids] = True
        with wp.ScopedDevice(self.device):
            batch.write_state(self._wm, self._wd, self._state, active)
        # the device holds float32: keep the host rows equal to what it simulates
        with wp.ScopedDevice(self.device):
            self._state[:] = batch.read_state(self._wm, self._wd, self._nstate, self.num_envs)
        self._run(self._load, [int(i) for i in env_ids])

    def _apply(self, field: str, index: int, values: np.ndarray) -> None:
        # UnsupportedScene (a ValueError): the evaluation runner reports it as bad input
        # (a task whose episodes carry model rows, e.g. Meta-World's goal sites).
        raise UnsupportedScene(
            f"the warp backend does not apply per-env model edits yet (asked for {field!r}); "
            "run physics perturbations on backend=mujoco or mjx"
        )
