"""`osc_pose`: the action kind of torque-driven robots (`control: osc_pose`, LIBERO's
Panda). Actions (B, 7) in [-1, 1] are robosuite's OSC_POSE inputs (±0.05 m, ±0.5 rad
relative to the current end-effector pose, world frame), gripper −1 open, +1 close
(`metasim.control.osc`); the torques are recomputed every physics substep by the handler
calling `substep`.
"""

from __future__ import annotations

import numpy as np

from metasim.control.action_kinds.base import ActionKindBase, KindOptions, register_action_kind
from metasim.control.osc import OscIndex, OscPose, arm_at
from metasim.scene.compile import ROBOT_PREFIX, CompiledScene
from metasim.sim.base import Kinematics, Substep


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


@register_action_kind("osc_pose")
class OscPoseKind(ActionKindBase):
    """Operational-space control, one goal per control step, torques every substep."""

    controls = ("osc_pose",)

    def __init__(self, compiled: CompiledScene, num_envs: int, options: KindOptions) -> None:
        super().__init__(compiled, num_envs, options)
        self.osc = osc_for(compiled, num_envs)

    @property
    def dim(self) -> int:
        return 7

    @property
    def substep(self) -> Substep | None:
        return self.osc  # OscPose: per env (called) or all envs at once (its `batch`)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return -np.ones(7), np.ones(7)

    def settle_action(self, n: int) -> np.ndarray:
        """(n, 7): hold still with the gripper open (what LIBERO's clients send while
        objects settle)."""
        action = np.zeros((n, 7))
        action[:, 6] = -1.0
        return action

    def hold_action(self, kin: Kinematics) -> np.ndarray:
        """Zero deltas; the gripper keeps its last command."""
        action = np.zeros((kin.qpos.shape[0], 7))
        action[:, 6] = np.where(self.osc.gripper_input > 0, 1.0, -1.0)
        return action

    def reset(self, env_ids: np.ndarray, qpos: np.ndarray, stale: bool = True) -> None:
        """The controller is built at the robot's home pose (as robosuite builds it at
        reset; with `stale`, LIBERO's first substep uses that pose, see control.osc) or,
        without `stale`, at `qpos` itself."""
        idx, grip = self.index, self.compiled.robot.gripper
        pose = np.array(qpos, dtype=np.float64)
        if stale:
            pose[:, idx.arm_qpos] = idx.home
            if grip is not None and grip.init_qpos is not None:
                pose[:, idx.gripper_qpos] = grip.init_qpos
        self.osc.reset(env_ids, arm_at(self.compiled.model, self.osc.index, pose), stale=stale)

    def to_ctrl(
        self, action: np.ndarray, kin: Kinematics, jac: np.ndarray, base_ctrl: np.ndarray
    ) -> np.ndarray:
        """The handler turns the held actions into torques every substep."""
        self.osc.command(np.clip(action, -1.0, 1.0))
        return base_ctrl
