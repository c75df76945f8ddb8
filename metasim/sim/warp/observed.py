"""The observation instant on the device: what the warp rig draws on the warp backend.

A scene with `task.observe_substep` (LIBERO: robosuite's substep 24 of 25) is observed
at the state that substep started from. The warp backend keeps that state's row on the
device inside the control step (`mujoco_warp.get_state` between substeps, in the
captured graph on CUDA); the host reads it in the step's one packed copy. The camera rig
needs its kinematics on the device: `ObservedData` holds a second MuJoCo Warp `Data` of
the batch's worlds (no contact or constraint room: it is never stepped), loads the kept
rows into it and computes kinematics, body COMs and camera/light poses there, as
`mj_setState` + `mj_kinematics` + `mj_camlight` give the native backend's observed frame.
No host round trip; the physics data is never touched, so trajectories stay as they were.
After a reset the kept rows of the reset worlds become the reset state's
(`ObservedData.keep`), as the native backend observes a loaded state.
"""

from __future__ import annotations

from typing import Any

import mujoco
import mujoco_warp as mjw
import numpy as np
import warp as wp

from metasim.sim.mujoco.rows import SPEC


@wp.kernel(enable_backward=False)
def copy_rows_where(
    n: int, active: wp.array[bool], src: wp.array2d[float], dst: wp.array2d[float]
) -> None:
    """dst[w, :n] = src[w, :n] for the worlds w where active[w]."""
    w = wp.tid()
    if active[w]:
        for i in range(n):
            dst[w, i] = src[w, i]  # type: ignore[index]


class ObservedData:
    """The observation instant's state rows of `nworld` worlds on the device (`rows`,
    which the step fills), and a MuJoCo Warp `Data` drawn from them (`update`).

    Starts with every world's rows of `state` (the current state is observed until the
    next step). `wd` is the backend's physics data: its geom poses of world-welded bodies
    (which MuJoCo Warp's kinematics never recomputes) are copied, and re-copied after a
    model edit that places them (`place_static`)."""

    def __init__(self, model: mujoco.MjModel, wd: Any, state: Any) -> None:
        nworld, device = int(state.shape[0]), state.device
        self.rows: Any = wp.zeros(state.shape, dtype=float, device=device)
        self.keep(state, np.ones(nworld, dtype=bool))
        with wp.ScopedDevice(device):
            self.data = mjw.put_data(model, mujoco.MjData(model), nworld=nworld, nconmax=1, njmax=1)
        self.place_static(wd)

    def keep(self, state: Any, active: np.ndarray) -> None:
        """Copy the device state rows `state` of the worlds where `active` into `rows`
        (after a reset the reset state is the observed one)."""
        mask: Any = wp.array(active.astype(bool), dtype=bool, device=self.rows.device)
        n, dim = int(self.rows.shape[1]), len(active)
        inputs = [n, mask, state]
        wp.launch(copy_rows_where, dim=dim, inputs=inputs, outputs=[self.rows], device=mask.device)

    def place_static(self, wd: Any) -> None:
        """The physics data's geom poses (the static ones are what this keeps of them)."""
        wp.copy(self.data.geom_xpos, wd.geom_xpos)
        wp.copy(self.data.geom_xmat, wd.geom_xmat)

    def update(self, wm: Any) -> Any:
        """Load `rows` and compute their kinematics on the device; returns the data (the
        rig computes camera and light poses from it)."""
        d = self.data
        mjw.set_state(wm, d, self.rows, int(SPEC))
        mjw.kinematics(wm, d)
        mjw.com_pos(wm, d)
        return d


__all__ = ["ObservedData"]
