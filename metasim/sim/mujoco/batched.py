"""The native handler's plain control step on MuJoCo's own batch (`mujoco.batch.Batch`).

When nothing runs between an env's substeps (no host controller, no legacy aref, no
observation instant), no contacts are reported and no env's model is edited, a control
step is one `Batch.step` over all envs: MuJoCo loads each mjSTATE_INTEGRATION row into a
per-thread MjData, runs `mj_step` `substeps` times, copies out the poses it left and
saves the row, on `nthread` threads with no Python (and so no GIL) between envs. The
end-of-step poses come from one `forward` to the position stage with contacts and
constraints switched off in the model for that call (they do not enter kinematics; the
collision pass would cost as much as the Python it replaces), the Jacobians from
`Batch.jac` (mj_kinematics, mj_comPos, mj_jac: mj_jacSite's own sequence). Bitwise the
same rows, poses and Jacobians as the handler's per-env loop (tests/test_handler_batch.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np
from mujoco.batch import Batch

from metasim.sim.mujoco.poses import POSES

# contacts and constraints off: the position stage is then kinematics, com, tendons and
# the mass matrix; what it computes of the poses is bitwise mj_kinematics' own
_KINEMATICS_ONLY = int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(
    mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
)


class BatchStepper:
    """Steps (B, nstate) state rows with `Batch` on the scene's model itself (so edits
    the scene's model gets after launch carry over) and refreshes the handler's buffers.

    `step_poses` and `poses` are the handler's (B, ...) arrays in POSES' order (as mj_step
    left them; after the step), `jacobians` its (site id, (B, 6, nv) array) pairs."""

    def __init__(
        self,
        model: mujoco.MjModel,
        num_envs: int,
        nthread: int,
        step_poses: Sequence[np.ndarray],
        poses: Sequence[np.ndarray],
        jacobians: Sequence[tuple[int, np.ndarray]],
    ) -> None:
        self.model = model
        self.batch = Batch(model, num_envs, nthread=nthread)
        self.batch.set_models(model)
        self._bound = [self.batch.bind(name) for name in POSES]
        self._step_pairs = _pairs(step_poses, self._bound)
        self._pose_pairs = _pairs(poses, self._bound)
        self._jacobians = [(int(model.site_bodyid[s]), s, out) for s, out in jacobians]
        self._site_pos = poses[POSES.index("site_xpos")]

    def step(self, state: np.ndarray, nstep: int) -> None:
        """Advance every row of `state` (B, nstate) by `nstep` substeps, in place."""
        batch = self.batch
        batch.state[:] = state
        batch.step(nstep=nstep)
        state[:] = batch.state
        for dst, src in self._step_pairs:
            dst[:] = src
        opt = self.model.opt
        flags = opt.disableflags
        opt.disableflags = flags | _KINEMATICS_ONLY
        try:
            batch.forward(stage=mujoco.mjtStage.mjSTAGE_POS)
        finally:
            opt.disableflags = flags
        for dst, src in self._pose_pairs:
            dst[:] = src
        for body, site, out in self._jacobians:
            jacp, jacr = batch.jac(body, self._site_pos[:, site])
            out[:, :3] = jacp
            out[:, 3:] = jacr


def _pairs(dst: Sequence[np.ndarray], src: Sequence[np.ndarray]) -> list[tuple[np.ndarray, ...]]:
    """(destination, bound source) of the non-empty pose arrays, shaped alike."""
    return [(d, s.reshape(d.shape)) for d, s in zip(dst, src, strict=True) if d.size]


__all__ = ["BatchStepper"]
