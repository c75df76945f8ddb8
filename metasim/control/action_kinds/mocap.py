"""`mocap_delta`: the action kind of robots whose hand is welded to a mocap body
(`control: mocap`; Meta-World's Sawyer), with the package's native 4-D action semantics
(metaworld 3.1.1 `SawyerXYZEnv.set_xyz_action` and `step`):

    a (B, 4): xyz in [-1, 1] (clipped), gripper effort (not clipped; +1 closes, −1 opens)
    target = clip(mocap_pos + clip(a[:, :3], -1, 1) * scale, low, high)    (world frame, m)
    ctrl[gripper actuator k] = mid_k + a[:, 3] * half_k

where mocap_pos is the mocap body's current position (the previous target, not the
hand's position: the weld lets the hand lag), scale and the box come from the robot
descriptor's `mocap:` block (Meta-World: 0.01 m, the task's hand_low / hand_high), and
mid_k, half_k are the centre and half-difference of actuator k's closed and open ctrl
(Meta-World's fingers: open (−1, 1), closed (1, −1), so ctrl = (a, −a) exactly, as its
`do_simulation([a, -a])`). The effort is passed unclipped, as the package passes it; the
actuators' ctrlrange clamps it inside MuJoCo. The target is written once per control step
before the physics substeps (`mocap`, which the env hands to `Handler.set_mocap`), with
the descriptor's fixed orientation when it gives one.

Arithmetic is float64 throughout; the package computes the delta in the action's own
dtype (a float32 action gives a float32 delta, within 1e-9 m of this one).
"""

from __future__ import annotations

import numpy as np

from metasim.control.action_kinds.base import (
    ActionKindBase,
    KindOptions,
    MocapCommand,
    register_action_kind,
)
from metasim.scene.compile import ROBOT_PREFIX, CompiledScene
from metasim.scene.robots import MocapInfo, RobotDescriptor
from metasim.sim.base import Kinematics

OPEN_EFFORT = -1.0  # the effort Meta-World resets its hand with (`_reset_hand`: [-1, 1])


@register_action_kind("mocap_delta")
class MocapDelta(ActionKindBase):
    """Mocap position deltas and a gripper effort (see the module docstring)."""

    controls = ("mocap",)

    def __init__(self, compiled: CompiledScene, num_envs: int, options: KindOptions) -> None:
        super().__init__(compiled, num_envs, options)
        m, robot = compiled.model, compiled.robot
        info = robot.mocap
        assert info is not None  # refusal() checked it
        self.info: MocapInfo = info
        body = m.body(ROBOT_PREFIX + info.body).id
        mocap_id = int(m.body_mocapid[body])
        if mocap_id < 0:
            raise ValueError(
                f"robot {robot.name!r}: mocap.body {info.body!r} is not a mocap body "
                '(mocap="true" on a child of the worldbody)'
            )
        self._body = int(body)
        self._low, self._high = np.array(info.low), np.array(info.high)
        self._ids = np.array([mocap_id])
        self._pos = np.zeros((num_envs, 1, 3))
        self._quat = None if info.quat is None else np.tile(np.array(info.quat), (num_envs, 1, 1))
        self._acts, self._mid, self._half = _gripper_drive(compiled)
        self._effort = np.full(num_envs, OPEN_EFFORT)  # the last effort, for hold_action

    @classmethod
    def refusal(cls, robot: RobotDescriptor) -> str | None:
        why = super().refusal(robot)
        if why is None and robot.mocap is None:
            return "has no mocap: block in its descriptor"
        return why

    @property
    def dim(self) -> int:
        return 4

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return -np.ones(4), np.ones(4)

    def settle_action(self, n: int) -> np.ndarray:
        """(n, 4): the mocap stays, the gripper opens."""
        action = np.zeros((n, 4))
        action[:, 3] = OPEN_EFFORT
        return action

    def hold_action(self, kin: Kinematics) -> np.ndarray:
        """Zero deltas; the gripper keeps its last effort."""
        action = np.zeros((kin.qpos.shape[0], 4))
        action[:, 3] = self._effort
        return action

    def reset(self, env_ids: np.ndarray, qpos: np.ndarray, stale: bool = True) -> None:
        self._effort[env_ids] = OPEN_EFFORT

    def to_ctrl(
        self, action: np.ndarray, kin: Kinematics, jac: np.ndarray, base_ctrl: np.ndarray
    ) -> np.ndarray:
        # np.minimum/np.maximum: np.clip's Python wrapper costs more than the clip itself
        delta = np.minimum(np.maximum(action[:, :3], -1.0), 1.0) * self.info.scale
        target = kin.body_pos[:, self._body] + delta  # the mocap body's xpos is mocap_pos
        self._pos[:, 0] = np.minimum(np.maximum(target, self._low), self._high)
        ctrl = base_ctrl.copy()
        if len(self._acts):
            ctrl[:, self._acts] = self._mid + action[:, 3:4] * self._half
        self._effort[:] = action[:, 3]
        return ctrl

    @property
    def mocap(self) -> MocapCommand:
        return MocapCommand(self._ids, self._pos, self._quat)


def _gripper_drive(compiled: CompiledScene) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(actuator ids (k,), mid ctrl (k,), half span (k,)) of the robot's gripper
    actuators: ctrl = mid + effort * half, effort +1 = closed, −1 = open."""
    grip = compiled.robot.gripper
    if grip is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
    names, opens, closes = grip.drives()
    m = compiled.model
    acts = np.array([m.actuator(ROBOT_PREFIX + n).id for n in names], dtype=np.int64)
    opened, closed = np.array(opens), np.array(closes)
    return acts, (closed + opened) / 2.0, (closed - opened) / 2.0
