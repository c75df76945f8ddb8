"""Action kinds of robots whose arm joints have position actuators (`control: position`),
gripper last in the canonical convention ([0, 1], 1 = open):

- `ee_delta` (B, 7): end-effector translation (m, world frame), rotation as a rotation
  vector (rad, world frame, applied on the left: R_new = exp(δ) R), gripper. Turned into
  joint targets by differential IK once per control step; the arm's position actuators
  track them during the physics substeps.
- `joint_pos` (B, n_arm + 1): absolute arm joint targets (rad), gripper.
"""

from __future__ import annotations

import numpy as np

from metasim.control.action_kinds.base import (
    ActionKindBase,
    KindOptions,
    as_slice,
    register_action_kind,
)
from metasim.control.ik import dls_step
from metasim.scene.compile import CompiledScene
from metasim.scene.robots import RobotDescriptor
from metasim.sim.base import Kinematics


class PositionKind(ActionKindBase):
    """What ee_delta and joint_pos share: the arm's position actuators and the gripper."""

    controls = ("position",)

    def __init__(self, compiled: CompiledScene, num_envs: int, options: KindOptions) -> None:
        super().__init__(compiled, num_envs, options)
        idx = self.index
        self.n_arm = len(idx.arm_qpos)
        # contiguous index arrays as slices (views, not gathers, every control step)
        self._arm_q, self._arm_dof, self._arm_act = (
            as_slice(idx.arm_qpos),
            as_slice(idx.arm_dof),
            as_slice(idx.arm_act),
        )
        self._lo, self._hi = idx.arm_range[:, 0].copy(), idx.arm_range[:, 1].copy()

    @classmethod
    def refusal(cls, robot: RobotDescriptor) -> str | None:
        why = super().refusal(robot)
        if why is None and len(robot.arm_actuators) != len(robot.arm_joints):
            return "has no position actuator for every arm joint"
        return why

    def _opening(self, kin: Kinematics) -> np.ndarray:
        """(B,) the gripper's opening in [0, 1] (1 = open) from its finger joints."""
        idx, grip = self.index, self.compiled.robot.gripper
        opening = np.ones(kin.qpos.shape[0])
        if grip is not None and len(idx.gripper_qpos):
            opening = np.abs(kin.qpos[:, idx.gripper_qpos]).sum(axis=1) / grip.max_width
            opening = np.clip(opening, 0, 1)
        return opening

    def _with_arm(self, target: np.ndarray, action: np.ndarray, base: np.ndarray) -> np.ndarray:
        """A copy of ctrl `base` (B, nu) with arm targets (B, n_arm) clipped to the joint
        ranges and the gripper's ctrl from the action's last column."""
        ctrl = base.copy()
        # np.minimum/np.maximum: np.clip's Python wrapper costs more than the clip itself
        ctrl[:, self._arm_act] = np.minimum(np.maximum(target, self._lo), self._hi)
        grip = self.compiled.robot.gripper
        if grip is not None:
            g = np.minimum(np.maximum(action[:, -1], 0.0), 1.0)
            ctrl[:, self.index.gripper_act] = grip.closed_ctrl + g * (
                grip.open_ctrl - grip.closed_ctrl
            )
        return ctrl


@register_action_kind("ee_delta")
class EeDelta(PositionKind):
    """End-effector deltas through differential IK (see the module docstring)."""

    @property
    def dim(self) -> int:
        return 7

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        high = np.array([0.05, 0.05, 0.05, 0.5, 0.5, 0.5, 1.0])
        low = -high
        low[-1] = 0.0
        return low, high

    def settle_action(self, n: int) -> np.ndarray:
        action = np.zeros((n, 7))
        action[:, 6] = 1.0
        return action

    def hold_action(self, kin: Kinematics) -> np.ndarray:
        b = kin.qpos.shape[0]
        return np.concatenate([np.zeros((b, 6)), self._opening(kin)[:, None]], axis=1)

    def to_ctrl(
        self, action: np.ndarray, kin: Kinematics, jac: np.ndarray, base_ctrl: np.ndarray
    ) -> np.ndarray:
        # Integrate the joint target (the previous command), not the measured joints:
        # the actuators lag a control step behind, and deltas must add up to the motion
        # a policy asked for. The target may lead the arm by at most `max_lead`
        # (anti-windup when the arm is blocked by contact).
        opt = self.options
        q = kin.qpos[:, self._arm_q]
        prev = base_ctrl[:, self._arm_act]
        dq = dls_step(
            jac[:, :, self._arm_dof],
            action[:, :6],
            nullspace_err=self.index.home - prev,
            nullspace_gain=opt.nullspace_gain,
        )
        step = opt.max_joint_step
        target = prev + np.minimum(np.maximum(dq, -step), step)
        target = np.minimum(np.maximum(target, q - opt.max_lead), q + opt.max_lead)
        return self._with_arm(target, action, base_ctrl)


@register_action_kind("joint_pos")
class JointPos(PositionKind):
    """Absolute arm joint targets (see the module docstring)."""

    @property
    def dim(self) -> int:
        return self.n_arm + 1

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        rng = self.index.arm_range
        return np.append(rng[:, 0], 0.0), np.append(rng[:, 1], 1.0)

    def hold_action(self, kin: Kinematics) -> np.ndarray:
        arm = kin.qpos[:, self.index.arm_qpos]
        return np.concatenate([arm, self._opening(kin)[:, None]], axis=1)

    def to_ctrl(
        self, action: np.ndarray, kin: Kinematics, jac: np.ndarray, base_ctrl: np.ndarray
    ) -> np.ndarray:
        return self._with_arm(action[:, : self.n_arm], action, base_ctrl)
