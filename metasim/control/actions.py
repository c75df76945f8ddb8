"""Action spaces: how a policy's action becomes actuator controls.

Each action space is a registered action kind (`metasim.control.action_kinds`; the
kinds and their actions are documented in their modules):

- robots with position actuators (descriptor `control: position`): `ee_delta` (B, 7) and
  `joint_pos` (B, n_arm + 1), gripper last in the canonical convention GRIPPER (below);
- torque-driven robots (`control: osc_pose`, LIBERO's Panda): `osc_pose` (B, 7) in
  [-1, 1], robosuite's OSC_POSE inputs, gripper −1 open, +1 close;
- robots whose hand is welded to a mocap body (`control: mocap`, Meta-World's Sawyer):
  `mocap_delta` (B, 4), Meta-World's native action (xyz in [-1, 1] times the descriptor's
  scale, gripper effort +1 close, −1 open).

`ActionController` is what the env holds: it picks the kind by name, checks that the
robot can be driven by it, checks each action batch, and delegates to the kind.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from metasim.control.action_kinds import (
    ACTION_KINDS,
    ActionKindBase,
    KindOptions,
    MocapCommand,
    as_slice,
)
from metasim.control.action_kinds.osc_pose import osc_for
from metasim.control.osc import OscPose
from metasim.scene.compile import CompiledScene
from metasim.sim.base import Kinematics, Substep

GRIPPER = "[0, 1], 1 = open, 0 = closed"  # the canonical gripper convention
ActionKind = str  # the name of a registered action kind (ACTION_KINDS)

__all__ = ["ACTION_KINDS", "GRIPPER", "ActionController", "ActionKind", "as_slice", "osc_for"]


@dataclass
class ActionController:
    """Maps batched actions to a (B, nu) ctrl array for one compiled scene (and, for
    kinds that drive a mocap body, to mocap targets: `mocap`)."""

    compiled: CompiledScene
    kind: ActionKind = "ee_delta"
    num_envs: int = 1
    max_joint_step: float = 0.35  # rad per control step, a guard against IK blow-ups
    max_lead: float = 0.3  # rad the joint target may run ahead of the measured joint
    nullspace_gain: float = 0.3

    def __post_init__(self) -> None:
        cls = ACTION_KINDS.get(self.kind)
        if cls is None:
            raise ValueError(
                f"unknown action space {self.kind!r}; expected one of {tuple(ACTION_KINDS.names())}"
            )
        robot = self.compiled.robot
        why = cls.refusal(robot)
        if why is not None:
            native = " or ".join(n for n, k in ACTION_KINDS.items() if k.refusal(robot) is None)
            raise ValueError(
                f"the robot {robot.name!r} of scene {self.compiled.scene.name!r} {why}: "
                f"its action space is {native or 'none of ' + str(ACTION_KINDS.names())}, "
                f"not {self.kind!r}"
            )
        options = KindOptions(self.max_joint_step, self.max_lead, self.nullspace_gain)
        self.impl: ActionKindBase = cls(self.compiled, self.num_envs, options)
        self.index = self.compiled.index
        self.n_arm = len(self.index.arm_qpos)

    @property
    def dim(self) -> int:
        return self.impl.dim

    @property
    def substep(self) -> Substep | None:
        """The host controller the handler runs every physics substep (osc_pose), if any."""
        return self.impl.substep

    @property
    def osc(self) -> OscPose | None:
        """The osc_pose kind's controller (None for other kinds)."""
        return getattr(self.impl, "osc", None)

    @property
    def mocap(self) -> MocapCommand | None:
        """The mocap targets the last `to_ctrl` computed, to be written before the physics
        substeps of the step (`Handler.set_mocap`); None for kinds without a mocap."""
        return self.impl.mocap

    def reset(self, env_ids: np.ndarray, qpos: np.ndarray, stale: bool = True) -> None:
        """Envs `env_ids` start an episode in configurations `qpos` (len(ids), nq); see the
        kind's `reset` (osc_pose: `stale` rebuilds the controller at the home pose)."""
        self.impl.reset(env_ids, qpos, stale)

    def settle_action(self, n: int) -> np.ndarray:
        """(n, dim) for `n` envs: hold still with the gripper open (what LIBERO's clients
        send while objects settle); only for the delta spaces."""
        return self.impl.settle_action(n)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) of the action box, shape (dim,)."""
        return self.impl.bounds()

    def hold_action(self, kin: Kinematics) -> np.ndarray:
        """(B, dim) the action that keeps the arm where it is and the gripper as it is."""
        return self.impl.hold_action(kin)

    def to_ctrl(
        self, action: np.ndarray, kin: Kinematics, jac: np.ndarray, base_ctrl: np.ndarray
    ) -> np.ndarray:
        """ctrl (B, nu) from action (B, dim), the current kinematics and the EE Jacobian."""
        action = np.asarray(action, dtype=np.float64)
        if action.ndim != 2 or action.shape[1] != self.dim:
            raise ValueError(f"{self.kind} actions must be (B, {self.dim}), got {action.shape}")
        if not np.isfinite(action).all():
            raise ValueError("actions contain NaN or inf")
        return self.impl.to_ctrl(action, kin, jac, base_ctrl)
