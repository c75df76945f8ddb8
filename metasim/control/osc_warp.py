"""robosuite's OSC_POSE on the warp backend's device (`OscPose.on_device`), run inside the
control step: after `mujoco_warp.step1` of every physics substep (kinematics, the
joint-space inertia and the bias forces computed on the device) and before `step2`, one
thread per world computes that substep's arm torques and gripper ctrl. No host round
trip per substep.

The specification is `metasim.control.osc` (numpy, float64): the same goal update on the
first substep of a control step (position delta, rotation-vector delta kept when all
three inputs are zero, gripper sign), the same torque

    τ = Jpᵀ Λp (kp e_p − kd v) + Jrᵀ Λr (kp e_r − kd ω) + bias + Nᵀ M (kn (q0 − q) − dn q̇)

and the same stale first substep after a reset (the start pose's kinematics, live bias).
Its inputs are the float32 physics; its arithmetic is float64, as robosuite's: near a
kinematic singularity J M⁻¹ Jᵀ is so ill-conditioned that a float32 inverse loses every
digit (the measured torques and trajectories: docs/log/backends.md, "float32 OSC near a
singularity"). The inverses are Cholesky solves of the symmetric positive-definite
matrices (M, J M⁻¹ Jᵀ); robosuite's pseudo-inverse differs from the inverse only for a
singular J M⁻¹ Jᵀ (an arm at a kinematic singularity), which the kernel reports per world
(`download`'s flags; the handler's `singular`) instead of silently differing.

The host `OscPose` stays the controller's one state: each control step its per-env rows
(the held action, goals, null-space target, gripper command, stale flag and start pose)
go to the device in one copy, and the rows the substeps change come back in one copy.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np
import warp as wp

from metasim.control.osc_kernels import osc_substep

# Column layout of one world's controller row (float64), for n arm dofs and g gripper
# actuators; `_layout` gives the offsets.
_FIXED = ("pending", 7), ("goal_pos", 3), ("goal_ori", 9)


def _layout(n: int, g: int) -> dict[str, tuple[int, int]]:
    sizes = [
        *_FIXED,
        ("q0", n),
        ("gripper", g),
        ("gripper_input", 1),
        ("stale", 1),
        ("singular", 1),
        ("start_ee_pos", 3),
        ("start_ee_mat", 9),
        ("start_jac", 6 * n),
        ("start_mass", n * n),
        ("start_q", n),
        ("start_qd", n),
    ]
    out, at = {}, 0
    for name, size in sizes:
        out[name] = (at, at + size)
        at += size
    return out


_OFFSETS = (
    "pending",
    "goal_pos",
    "goal_ori",
    "q0",
    "gripper",
    "gripper_input",
    "stale",
    "singular",
    "start_ee_pos",
    "start_ee_mat",
    "start_jac",
    "start_mass",
    "start_q",
    "start_qd",
)


def _ancestors(model: mujoco.MjModel, body: int) -> set[int]:
    out = set()
    while body > 0:
        out.add(body)
        body = int(model.body_parentid[body])
    return out


class DeviceOsc:
    """The device side of one `OscPose` (B worlds): its rows on the device, the model
    constants the kernel reads, and scratch. `upload` before a control step's substeps,
    `substep(k, ...)` after each step1, `download` after the last (the handler's
    `DeviceController` protocol, `metasim.sim.base`)."""

    def __init__(self, model: mujoco.MjModel, osc: Any, mass_elem: np.ndarray, device: str):
        # osc: the OscPose that makes this (OscPose.on_device; not imported: a cycle)
        self.osc = osc
        idx, cfg, b = osc.index, osc.config, osc.num_envs
        n, g = len(idx.arm_dof), len(idx.gripper_actuators)
        self.n, self.g, self.num_envs, self.device = n, g, b, device
        self.layout = _layout(n, g)
        self.width = max(end for _, end in self.layout.values())
        body = int(model.site_bodyid[idx.site])
        chain = _ancestors(model, body)
        affects = [float(int(model.dof_bodyid[d]) in chain) for d in idx.arm_dof]
        dofs = np.asarray(idx.arm_dof)
        hi, lo = np.maximum.outer(dofs, dofs), np.minimum.outer(dofs, dofs)
        madr = mass_elem[hi, lo]  # CSR address of M[i, j] (lower triangle, i >= j)
        if (madr < 0).any():
            raise ValueError("the arm's joints are not one kinematic chain (M block absent)")
        grip = idx.gripper_range
        gsign = np.asarray(cfg.gripper_sign, dtype=np.float64)[:g]

        def arr(values: Any, dtype: Any = wp.float64) -> Any:
            return wp.array(np.asarray(values), dtype=dtype, device=device)

        self._const = dict(
            n=n,
            g=g,
            site=int(idx.site),
            site_root=int(model.body_rootid[body]),
            arm_dof=arr(idx.arm_dof, int),
            arm_qpos=arr(idx.arm_qpos, int),
            arm_act=arr(idx.arm_actuators, int),
            affects=arr(affects),
            madr=wp.array(madr.astype(np.int32), dtype=int, device=device),
            torque_lo=arr(idx.torque_range[:, 0]),
            torque_hi=arr(idx.torque_range[:, 1]),
            grip_act=arr(np.asarray(idx.gripper_actuators, dtype=np.int32), int),
            grip_mid=arr(0.5 * (grip[:, 0] + grip[:, 1])),
            grip_half=arr(0.5 * (grip[:, 1] - grip[:, 0])),
            grip_step=arr(cfg.gripper_speed * gsign),
            gains=wp.vec4d(cfg.kp, cfg.kd, cfg.nullspace_kp, 2.0 * np.sqrt(cfg.nullspace_kp)),
            scales=wp.vec2d(cfg.pos_scale, cfg.rot_scale),
            lay=arr([self.layout[name][0] for name in _OFFSETS], int),
        )
        size = max(n, 6)
        f64 = wp.float64
        self.row = wp.zeros((b, self.width), dtype=f64, device=device)
        self._scratch = dict(
            jac=wp.zeros((b, 6, n), dtype=f64, device=device),
            mass=wp.zeros((b, n, n), dtype=f64, device=device),
            minv=wp.zeros((b, n, n), dtype=f64, device=device),
            jmj=wp.zeros((b, 6, 6), dtype=f64, device=device),
            lam=wp.zeros((b, 6, 6), dtype=f64, device=device),
            chol=wp.zeros((b, size, size), dtype=f64, device=device),
            vecs=wp.zeros((b, 4 * n + 12), dtype=f64, device=device),
        )
        self._host = np.zeros((b, self.width))

    def _cols(self, name: str) -> slice:
        start, end = self.layout[name]
        return slice(start, end)

    def upload(self) -> None:
        """Copy the controller's per-env rows (float64) to the device."""
        osc = self.osc
        h, b = self._host, self.num_envs
        c = self._cols
        h[:, c("pending")] = osc.pending
        h[:, c("goal_pos")] = osc.goal_pos
        h[:, c("goal_ori")] = osc.goal_ori.reshape(b, 9)
        h[:, c("q0")] = osc.q0
        h[:, c("gripper")] = osc.gripper
        h[:, c("gripper_input")] = osc.gripper_input[:, None]
        h[:, c("stale")] = osc.stale[:, None]
        h[:, c("singular")] = 0.0
        s = osc.start
        h[:, c("start_ee_pos")] = s.ee_pos
        h[:, c("start_ee_mat")] = s.ee_mat.reshape(b, 9)
        h[:, c("start_jac")] = s.jac.reshape(b, -1)
        h[:, c("start_mass")] = s.mass.reshape(b, -1)
        h[:, c("start_q")] = s.q
        h[:, c("start_qd")] = s.qd
        self.row.assign(h)

    def substep(self, k: int, d: Any) -> None:
        """Physics substep k of every world of `d` (a mujoco_warp Data after step1): write
        the arm torques and gripper ctrl into d.ctrl."""
        wp.launch(
            osc_substep,
            dim=self.num_envs,
            inputs=[
                k,
                *self._const.values(),
                d.qpos,
                d.qvel,
                d.site_xpos,
                d.site_xmat,
                d.subtree_com,
                d.cdof,
                d.M,
                d.qfrc_bias,
                self.row,
                *self._scratch.values(),
            ],
            outputs=[d.ctrl],
            device=self.device,
        )

    def download(self) -> np.ndarray:
        """Copy the rows the substeps change back into the controller; the per-env flag of a
        singular J M⁻¹ Jᵀ (or M) met during them (B,) bool."""
        osc = self.osc
        h = self.row.numpy()
        c, b = self._cols, self.num_envs
        osc.goal_pos[:] = h[:, c("goal_pos")]
        osc.goal_ori[:] = h[:, c("goal_ori")].reshape(b, 3, 3)
        osc.gripper[:] = h[:, c("gripper")]
        osc.gripper_input[:] = h[:, c("gripper_input")][:, 0]
        osc.stale[:] = h[:, c("stale")][:, 0] > 0.5
        return np.asarray(h[:, c("singular")][:, 0] > 0.5)
