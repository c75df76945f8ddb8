"""The native handler's plain control step on MuJoCo's own batch (`mujoco.batch.Batch`).

When the step's schedule is empty (no host controller, no legacy aref, no observation
instant, no contacts reported) and no env's model is edited, a control step is one
`Batch.step` over all envs: MuJoCo loads each mjSTATE_INTEGRATION row into a
per-thread MjData, runs `mj_step` `substeps` times, copies out the poses it left and
saves the row, on `nthread` threads with no Python (and so no GIL) between envs. The
end-of-step poses come from one `forward` to the position stage with contacts and
constraints switched off in the model for that call (they do not enter kinematics; the
collision pass would cost as much as the Python it replaces), and the site Jacobians
from the `cdof` and `subtree_com` that forward computed, with mj_jac's own arithmetic
(`site_jacobian`; `Batch.jac` would run the kinematics again). Bitwise the same rows,
poses and Jacobians as the handler's lockstep (tests/sim/test_handler_batch.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

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
        self._cdof, self._com = self.batch.bind("cdof"), self.batch.bind("subtree_com")
        site_pos = poses[POSES.index("site_xpos")]
        self._jacobians = [(site_jacobian(model, s, site_pos), out) for s, out in jacobians]

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
        for fill, out in self._jacobians:
            fill(self._cdof, self._com, out)


def site_jacobian(
    model: mujoco.MjModel, site: int, site_pos: np.ndarray
) -> Callable[[np.ndarray, np.ndarray, np.ndarray], None]:
    """`fill(cdof, subtree_com, out)`: site `site`'s (B, 6, nv) Jacobians from (B, nv, 6)
    `cdof` and (B, nbody, 3) `subtree_com` of the kinematics that put the site at
    `site_pos` (B, nsite, 3), computed as mj_jac computes them: offset = point - com of
    the body's root subtree; per dof of the chain, rotation rows = cdof[:3], translation
    rows = cdof[3:] + cdof[:3] x offset (mju_cross' order). Dofs off the chain keep the
    zeros `out` holds."""
    body = int(model.site_bodyid[site])
    root = int(model.body_rootid[body])
    while body and not model.body_dofnum[body]:  # the nearest ancestor that moves
        body = int(model.body_parentid[body])
    chain: list[int] = []
    dof = int(model.body_dofadr[body] + model.body_dofnum[body] - 1) if body else -1
    while dof >= 0:
        chain.append(dof)
        dof = int(model.dof_parentid[dof])
    dofs = np.array(sorted(chain), dtype=np.int64)  # (each dof's column on its own)
    contiguous = len(chain) and dofs[-1] - dofs[0] == len(dofs) - 1
    cols: slice | np.ndarray = slice(int(dofs[0]), int(dofs[-1]) + 1) if contiguous else dofs

    def fill(cdof: np.ndarray, com: np.ndarray, out: np.ndarray) -> None:
        if not len(dofs):
            return
        off = site_pos[:, site] - com[:, root]  # (B, 3)
        c = cdof[:, cols]  # (B, k, 6)
        ox, oy, oz = off[:, 0, None], off[:, 1, None], off[:, 2, None]
        rx, ry, rz = c[..., 0], c[..., 1], c[..., 2]
        out[:, 0, cols] = c[..., 3] + (ry * oz - rz * oy)
        out[:, 1, cols] = c[..., 4] + (rz * ox - rx * oz)
        out[:, 2, cols] = c[..., 5] + (rx * oy - ry * ox)
        out[:, 3:, cols] = c[..., :3].transpose(0, 2, 1)

    return fill


def _pairs(dst: Sequence[np.ndarray], src: Sequence[np.ndarray]) -> list[tuple[np.ndarray, ...]]:
    """(destination, bound source) of the non-empty pose arrays, shaped alike."""
    return [(d, s.reshape(d.shape)) for d, s in zip(dst, src, strict=True) if d.size]


__all__ = ["BatchStepper", "site_jacobian"]
