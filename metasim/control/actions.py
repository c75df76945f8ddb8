"""Action spaces: how a policy's action becomes actuator controls.

For robots with position actuators (descriptor `control: position`), two spaces, both
with the gripper last in the canonical convention GRIPPER (below):
- `ee_delta` (B, 7): end-effector translation (m, world frame), rotation as a rotation
  vector (rad, world frame, applied on the left: R_new = exp(δ) R), gripper.
- `joint_pos` (B, n_arm + 1): absolute arm joint targets (rad), gripper.
The end-effector delta is turned into joint targets by differential IK once per control
step; the arm's position actuators track them during the physics substeps.

For torque-driven robots (`control: osc_pose`, LIBERO's Panda), one space:
- `osc_pose` (B, 7) in [-1, 1]: robosuite's OSC_POSE inputs (±0.05 m, ±0.5 rad relative
  to the current end-effector pose, world frame), gripper −1 open, +1 close
  (`metasim.control.osc`); the torques are recomputed every physics substep by the
  handler calling `substep`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from metasim.control.ik import dls_step
from metasim.control.osc import OscIndex, OscPose, arm_at
from metasim.scene.compile import ROBOT_PREFIX, CompiledScene
from metasim.sim.base import Kinematics, Substep

GRIPPER = "[0, 1], 1 = open, 0 = closed"  # the canonical gripper convention
ActionKind = Literal["ee_delta", "joint_pos", "osc_pose"]
ACTION_KINDS: tuple[ActionKind, ...] = ("ee_delta", "joint_pos", "osc_pose")


@dataclass
class ActionController:
    """Maps batched actions to a (B, nu) ctrl array for one compiled scene."""

    compiled: CompiledScene
    kind: ActionKind = "ee_delta"
    num_envs: int = 1
    max_joint_step: float = 0.35  # rad per control step, a guard against IK blow-ups
    max_lead: float = 0.3  # rad the joint target may run ahead of the measured joint
    nullspace_gain: float = 0.3

    def __post_init__(self) -> None:
        if self.kind not in ACTION_KINDS:
            raise ValueError(f"unknown action space {self.kind!r}; expected one of {ACTION_KINDS}")
        robot = self.compiled.robot
        if (self.kind == "osc_pose") != (robot.control == "osc_pose"):
            native = "osc_pose" if robot.control == "osc_pose" else "ee_delta or joint_pos"
            raise ValueError(
                f"the robot {robot.name!r} of scene {self.compiled.scene.name!r} is driven "
                f"by {robot.control} actuators: its action space is {native}, not {self.kind!r}"
            )
        self.osc = osc_for(self.compiled, self.num_envs) if self.kind == "osc_pose" else None
        self.index = self.compiled.index
        self.n_arm = len(self.index.arm_qpos)
        idx = self.index
        # contiguous index arrays as slices (views, not gathers, every control step)
        self._arm_q, self._arm_dof, self._arm_act = (
            as_slice(idx.arm_qpos),
            as_slice(idx.arm_dof),
            as_slice(idx.arm_act),
        )
        self._lo, self._hi = idx.arm_range[:, 0].copy(), idx.arm_range[:, 1].copy()

    @property
    def dim(self) -> int:
        return self.n_arm + 1 if self.kind == "joint_pos" else 7

    @property
    def substep(self) -> Substep | None:
        """The host controller the handler runs every physics substep (osc_pose), if any."""
        return self.osc  # OscPose: per env (called) or all envs at once (its `batch`)

    def reset(self, env_ids: np.ndarray, qpos: np.ndarray, stale: bool = True) -> None:
        """Envs `env_ids` start an episode in configurations `qpos` (len(ids), nq): an
        osc_pose controller is built at the robot's home pose (as robosuite builds it at
        reset; with `stale`, LIBERO's first substep uses that pose, see control.osc) or,
        without `stale`, at `qpos` itself."""
        if self.osc is None:
            return
        idx, grip = self.index, self.compiled.robot.gripper
        pose = np.array(qpos, dtype=np.float64)
        if stale:
            pose[:, idx.arm_qpos] = idx.home
            if grip is not None and grip.init_qpos is not None:
                pose[:, idx.gripper_qpos] = grip.init_qpos
        self.osc.reset(env_ids, arm_at(self.compiled.model, self.osc.index, pose), stale=stale)

    def settle_action(self, n: int) -> np.ndarray:
        """(n, dim) for `n` envs: hold still with the gripper open (what LIBERO's clients
        send while objects settle); only for the delta spaces."""
        if self.kind == "joint_pos":
            raise ValueError("settle steps need a delta action space (ee_delta or osc_pose)")
        action = np.zeros((n, 7))
        action[:, 6] = -1.0 if self.kind == "osc_pose" else 1.0
        return action

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) of the action box, shape (dim,)."""
        if self.kind == "osc_pose":
            return -np.ones(7), np.ones(7)
        if self.kind == "ee_delta":
            high = np.array([0.05, 0.05, 0.05, 0.5, 0.5, 0.5, 1.0])
            low = -high
            low[-1] = 0.0
            return low, high
        rng = self.index.arm_range
        return np.append(rng[:, 0], 0.0), np.append(rng[:, 1], 1.0)

    def hold_action(self, kin: Kinematics) -> np.ndarray:
        """(B, dim) the action that keeps the arm where it is and the gripper as it is."""
        idx = self.index
        b = kin.qpos.shape[0]
        if self.osc is not None:  # zero deltas; the gripper keeps its last command
            action = np.zeros((b, 7))
            action[:, 6] = np.where(self.osc.gripper_input > 0, 1.0, -1.0)
            return action
        grip = self.compiled.robot.gripper
        opening = np.ones(b)
        if grip is not None and len(idx.gripper_qpos):
            opening = np.abs(kin.qpos[:, idx.gripper_qpos]).sum(axis=1) / grip.max_width
            opening = np.clip(opening, 0, 1)
        if self.kind == "ee_delta":
            return np.concatenate([np.zeros((b, 6)), opening[:, None]], axis=1)
        return np.concatenate([kin.qpos[:, idx.arm_qpos], opening[:, None]], axis=1)

    def to_ctrl(
        self, action: np.ndarray, kin: Kinematics, jac: np.ndarray, base_ctrl: np.ndarray
    ) -> np.ndarray:
        """ctrl (B, nu) from action (B, dim), the current kinematics and the EE Jacobian."""
        action = np.asarray(action, dtype=np.float64)
        if action.ndim != 2 or action.shape[1] != self.dim:
            raise ValueError(f"{self.kind} actions must be (B, {self.dim}), got {action.shape}")
        if not np.isfinite(action).all():
            raise ValueError("actions contain NaN or inf")
        if self.osc is not None:  # the handler turns them into torques every substep
            self.osc.command(np.clip(action, -1.0, 1.0))
            return base_ctrl
        idx = self.index
        q = kin.qpos[:, self._arm_q]
        # np.minimum/np.maximum: np.clip's Python wrapper costs more than the clip itself
        if self.kind == "ee_delta":
            # Integrate the joint target (the previous command), not the measured joints:
            # the actuators lag a control step behind, and deltas must add up to the motion
            # a policy asked for. The target may lead the arm by at most `max_lead`
            # (anti-windup when the arm is blocked by contact).
            prev = base_ctrl[:, self._arm_act]
            dq = dls_step(
                jac[:, :, self._arm_dof],
                action[:, :6],
                nullspace_err=idx.home - prev,
                nullspace_gain=self.nullspace_gain,
            )
            step = self.max_joint_step
            target = prev + np.minimum(np.maximum(dq, -step), step)
            target = np.minimum(np.maximum(target, q - self.max_lead), q + self.max_lead)
        else:
            target = action[:, : self.n_arm]
        ctrl = base_ctrl.copy()
        ctrl[:, self._arm_act] = np.minimum(np.maximum(target, self._lo), self._hi)
        grip = self.compiled.robot.gripper
        if grip is not None:
            g = np.minimum(np.maximum(action[:, -1], 0.0), 1.0)
            ctrl[:, idx.gripper_act] = grip.closed_ctrl + g * (grip.open_ctrl - grip.closed_ctrl)
        return ctrl


def osc_for(compiled: CompiledScene, num_envs: int) -> OscPose:
    """LIBERO's OSC_POSE for the robot of `compiled`: its arm joints, end-effector site and
    the actuators of its gripper joints."""
    m, robot = compiled.model, compiled.robot
    prefix = ROBOT_PREFIX
    grip_joints = {m.joint(prefix + j).id for j in (robot.gripper.joints if robot.gripper else ())}
    grip_acts = [m.actuator(a).name for a in range(m.nu) if m.actuator_trnid[a, 0] in grip_joints]
    index = OscIndex.from_model(
        m, prefix + robot.ee_site, [prefix + j for j in robot.arm_joints], grip_acts
    )
    return OscPose(index, num_envs)


def as_slice(index: np.ndarray | int) -> slice | np.ndarray | int:
    """`index` as a slice when it is a run of consecutive integers, else unchanged."""
    if isinstance(index, (int, np.integer)):
        return int(index)
    index = np.asarray(index)
    if len(index) and np.array_equal(index, np.arange(index[0], index[0] + len(index))):
        return slice(int(index[0]), int(index[0]) + len(index))
    return index
