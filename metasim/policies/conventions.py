"""Action conventions: what a policy's action vector means, declared and converted.

A policy config declares its action convention (`actions:` in policies/<name>.yaml):

    actions:
      space: ee_delta      # ee_delta | ee_pose | joint_pos | joint_vel | osc_pose
      rotation: axis_angle # axis_angle | euler_xyz | quat_wxyz | quat_xyzw | rot6d
      gripper: open1       # open1 | close1 | pm1_open_neg | pm1_open_pos | relative
      binarize: false      # threshold the (converted) gripper at 0.5
      frame: world         # ee_delta / ee_pose frame: world | base (the robot's base)

The harness converts every executed action into the env's canonical space, using the
observation at the step the action is executed (absolute poses and joint velocities are
relative to where the robot is then): on robots with position actuators `ee_delta`
(world-frame rotation vector) or `joint_pos`, gripper in [0, 1] with 1 = open; on
torque-driven robots (LIBERO's Panda) `osc_pose`, robosuite's OSC_POSE inputs in [-1, 1]
(±0.05 m, ±0.5 rad), gripper −1 open, +1 close. `space: osc_pose` declares those inputs
(axis-angle rotation, as LIBERO-finetuned policies output them); on a position-driven
robot they are scaled into an `ee_delta`, and a delta convention on a torque-driven robot
is scaled into OSC inputs, so delta policies run on either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from metasim.rotations import (
    axis_angle_to_mat,
    mat_to_axis_angle,
    mat_to_quat,
    quat_to_mat,
    rows_times,
)

Space = Literal["ee_delta", "ee_pose", "joint_pos", "joint_vel", "osc_pose", "mocap_delta"]
EnvSpace = Literal["ee_delta", "joint_pos", "osc_pose", "mocap_delta"]
OSC_SCALE = (0.05, 0.5)  # OSC_POSE input 1 = 0.05 m, 0.5 rad (robosuite osc_pose.json)
Rotation = Literal["axis_angle", "euler_xyz", "quat_wxyz", "quat_xyzw", "rot6d"]
Gripper = Literal["open1", "close1", "pm1_open_neg", "pm1_open_pos", "relative"]

Array = np.ndarray


@dataclass(frozen=True)
class GripperConvention:
    """A gripper convention: what it means and its maps to and from the canonical opening
    g in [0, 1] (1 = open), given the current opening (only `relative` reads it)."""

    meaning: str
    to_open1: Callable[[Array, Array], Array]
    from_open1: Callable[[Array, Array], Array]
    absolute: bool = True  # False: a change of the opening, not an opening


# The one table of gripper conventions (Gripper above names the same keys).
GRIPPERS: dict[str, GripperConvention] = {
    "open1": GripperConvention(
        "[0, 1], 1 = open (RLDS, OpenVLA, Octo)", lambda g, c: g, lambda g, c: g
    ),
    "close1": GripperConvention("[0, 1], 1 = closed", lambda g, c: 1.0 - g, lambda g, c: 1.0 - g),
    "pm1_open_neg": GripperConvention(
        "[-1, 1], -1 = open, +1 = closed (LIBERO / robosuite)",
        lambda g, c: (1.0 - g) / 2.0,
        lambda g, c: 1.0 - 2.0 * g,
    ),
    "pm1_open_pos": GripperConvention(
        "[-1, 1], +1 = open", lambda g, c: (1.0 + g) / 2.0, lambda g, c: 2.0 * g - 1.0
    ),
    "relative": GripperConvention(
        "a change of the opening in [0, 1] units, added to the current opening",
        lambda g, c: c + g,
        lambda g, c: g - c,
        absolute=False,
    ),
}
GRIPPER_MEANING: dict[str, str] = {k: v.meaning for k, v in GRIPPERS.items()}


def _quat_xyzw_to_mat(r: Array) -> Array:
    return quat_to_mat(r[..., [3, 0, 1, 2]])


def _mat_to_quat_xyzw(m: Array) -> Array:
    return mat_to_quat(m)[..., [1, 2, 3, 0]]


def _mat_to_rot6d(m: Array) -> Array:
    m = np.asarray(m, dtype=np.float64)
    return np.concatenate([m[..., :, 0], m[..., :, 1]], axis=-1)


@dataclass(frozen=True)
class RotationFormat:
    """A rotation format: its width and its maps to and from (..., 3, 3) matrices."""

    dim: int
    to_mat: Callable[[Array], Array]
    from_mat: Callable[[Array], Array]


# The one table of rotation formats (Rotation above names the same keys); filled in
# below the converters it refers to.
ROTATIONS: dict[str, RotationFormat] = {}


class ActionConvention(BaseModel):
    model_config = ConfigDict(extra="forbid")
    space: Space = "ee_delta"
    rotation: Rotation = "axis_angle"
    gripper: Gripper = "open1"
    binarize: bool = False
    frame: Literal["world", "base"] = "world"

    @model_validator(mode="after")
    def _osc_axis_angle(self) -> ActionConvention:
        if self.space == "osc_pose" and (self.rotation != "axis_angle" or self.frame != "world"):
            raise ValueError("space osc_pose takes rotation axis_angle in the world frame")
        if self.space == "mocap_delta" and (self.gripper != "pm1_open_neg" or self.binarize):
            raise ValueError(
                "space mocap_delta is Meta-World's 4-D action as the package takes it: "
                "gripper pm1_open_neg (+1 closes), not binarized"
            )
        return self

    @property
    def env_space(self) -> Literal["ee_delta", "joint_pos", "mocap_delta"]:
        """The canonical space these actions become on a robot with position actuators
        (`mocap_delta` actions only drive a mocap-driven robot, unchanged)."""
        if self.space == "mocap_delta":
            return "mocap_delta"
        return "joint_pos" if self.space in ("joint_pos", "joint_vel") else "ee_delta"

    def env_space_on(self, control: str) -> EnvSpace:
        """The env's action space on a robot driven by `control` actuators (`position` or
        `osc_pose`, or `mocap`); a ValueError when these actions cannot drive it."""
        if (control == "mocap") != (self.space == "mocap_delta"):
            raise ValueError(
                f"actions.space {self.space!r} cannot drive a {control!r} robot: a "
                "mocap-driven robot (Meta-World's Sawyer) takes mocap_delta actions (4-D: "
                "xyz delta x the mocap scale, gripper effort +1 closes), and mocap_delta "
                "actions drive only such a robot"
            )
        if control != "osc_pose":
            return self.env_space
        if self.space in ("joint_pos", "joint_vel"):
            raise ValueError(
                f"actions.space {self.space!r} cannot drive a torque-controlled robot "
                "(osc_pose): declare osc_pose, ee_delta or ee_pose actions"
            )
        return "osc_pose"

    def names(self, n_arm: int) -> list[str]:
        """Names of the columns of one action vector in this convention, gripper last
        (a dataset's `action` feature names them): `joint_<i>` per arm joint, or `x, y, z`
        and for a rotating space `r<i>` per rotation component."""
        if self.space in ("joint_pos", "joint_vel"):
            arm = [f"joint_{i}" for i in range(n_arm)]
        elif self.space == "mocap_delta":  # a position delta only
            arm = ["x", "y", "z"]
        else:
            arm = ["x", "y", "z", *(f"r{i}" for i in range(ROT_DIM[self.rotation]))]
        return [*arm, "gripper"]

    def dim(self, n_arm: int) -> int:
        """Width of one action vector in this convention (gripper last): its names."""
        return len(self.names(n_arm))

    def describe(self, n_arm: int) -> str:
        if self.space == "mocap_delta":
            return "4-D: mocap xyz delta in [-1, 1] (x the robot's mocap scale), gripper effort"
        if self.space == "osc_pose":
            arm = "OSC_POSE inputs in [-1, 1]: xyz (x 0.05 m) + axis_angle (x 0.5 rad)"
        elif self.space in ("joint_pos", "joint_vel"):
            unit = "rad" if self.space == "joint_pos" else "rad/s"
            arm = f"{n_arm} arm joint {'positions' if self.space == 'joint_pos' else 'velocities'}"
            arm += f" ({unit})"
        else:
            kind = "delta" if self.space == "ee_delta" else "absolute pose"
            arm = f"EEF {kind}: xyz (m) + {self.rotation} ({self.frame} frame)"
        binar = ", binarized at 0.5" if self.binarize else ""
        return f"{self.dim(n_arm)}-D: {arm}, gripper {GRIPPER_MEANING[self.gripper]}{binar}"


# ---------------------------------------------------------------- rotation formats


def euler_xyz_to_mat(e: np.ndarray) -> np.ndarray:
    """(..., 3) extrinsic roll-pitch-yaw about fixed x, y, z (R = Rz Ry Rx)."""
    r, p, y = np.moveaxis(np.asarray(e, dtype=np.float64), -1, 0)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    out = np.empty((*np.shape(r), 3, 3))
    out[..., 0, 0] = cy * cp
    out[..., 0, 1] = cy * sp * sr - sy * cr
    out[..., 0, 2] = cy * sp * cr + sy * sr
    out[..., 1, 0] = sy * cp
    out[..., 1, 1] = sy * sp * sr + cy * cr
    out[..., 1, 2] = sy * sp * cr - cy * sr
    out[..., 2, 0] = -sp
    out[..., 2, 1] = cp * sr
    out[..., 2, 2] = cp * cr
    return out


def mat_to_euler_xyz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    pitch = np.arcsin(np.clip(-m[..., 2, 0], -1.0, 1.0))
    roll = np.arctan2(m[..., 2, 1], m[..., 2, 2])
    yaw = np.arctan2(m[..., 1, 0], m[..., 0, 0])
    return np.stack([roll, pitch, yaw], axis=-1)


def rot6d_to_mat(v: np.ndarray) -> np.ndarray:
    """(..., 6): the first two columns of the matrix, Gram–Schmidt orthonormalized."""
    v = np.asarray(v, dtype=np.float64)
    a, b = v[..., :3], v[..., 3:6]
    x = a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)
    b = b - np.sum(x * b, axis=-1, keepdims=True) * x
    y = b / np.maximum(np.linalg.norm(b, axis=-1, keepdims=True), 1e-12)
    z = np.cross(x, y)
    return np.stack([x, y, z], axis=-1)


ROTATIONS.update(
    {
        "axis_angle": RotationFormat(3, axis_angle_to_mat, mat_to_axis_angle),
        "euler_xyz": RotationFormat(3, euler_xyz_to_mat, mat_to_euler_xyz),
        "quat_wxyz": RotationFormat(4, quat_to_mat, mat_to_quat),
        "quat_xyzw": RotationFormat(4, _quat_xyzw_to_mat, _mat_to_quat_xyzw),
        "rot6d": RotationFormat(6, rot6d_to_mat, _mat_to_rot6d),
    }
)
ROT_DIM: dict[str, int] = {k: v.dim for k, v in ROTATIONS.items()}
assert set(ROTATIONS) == set(get_args(Rotation)) and set(GRIPPERS) == set(get_args(Gripper))


def _format(fmt: str) -> RotationFormat:
    if fmt not in ROTATIONS:
        raise ValueError(f"unknown rotation format {fmt!r}; expected one of {sorted(ROTATIONS)}")
    return ROTATIONS[fmt]


def to_mat(rot: np.ndarray, fmt: str) -> np.ndarray:
    """(..., ROT_DIM[fmt]) rotations in format `fmt` to (..., 3, 3) matrices."""
    return _format(fmt).to_mat(np.asarray(rot, dtype=np.float64))


def from_mat(mat: np.ndarray, fmt: str) -> np.ndarray:
    """(..., 3, 3) matrices to format `fmt` (the inverse of `to_mat`)."""
    return _format(fmt).from_mat(np.asarray(mat, dtype=np.float64))


# ---------------------------------------------------------------- conversion


class ActionConverter:
    """Converts (B, dim) actions of a convention into the env's canonical actions.

    `obs` is the env's policy observation group at the step the action executes:
    `joint_pos` (B, n_arm), `gripper` (B, 1), `ee_pos` (B, 3), `ee_quat` (B, 4) wxyz.
    `base_pos`, `base_mat`: the robot base's world pose (used when frame is `base`).
    """

    def __init__(
        self,
        conv: ActionConvention,
        n_arm: int,
        control_dt: float,
        base_pos: np.ndarray | None = None,
        base_mat: np.ndarray | None = None,
        env_space: EnvSpace | None = None,
    ) -> None:
        self.conv, self.n_arm, self.dt = conv, n_arm, control_dt
        self.base = np.eye(3) if base_mat is None else np.asarray(base_mat, dtype=np.float64)
        self.base_pos = np.zeros(3) if base_pos is None else np.asarray(base_pos, dtype=float)
        self.dim = conv.dim(n_arm)
        self.env_space: EnvSpace = env_space or conv.env_space
        if self.env_space == "osc_pose":
            conv.env_space_on("osc_pose")  # refuses joint conventions
            self.identity = conv == ActionConvention(space="osc_pose", gripper="pm1_open_neg")
        elif self.env_space == "mocap_delta":
            conv.env_space_on("mocap")  # refuses every other convention
            self.identity = True
        else:
            self.identity = conv == ActionConvention() or (
                conv.space == "joint_pos" and conv.gripper == "open1" and not conv.binarize
            )

    def __call__(self, actions: np.ndarray, obs: dict[str, Any]) -> np.ndarray:
        a = np.asarray(actions, dtype=np.float64)
        if a.ndim != 2 or a.shape[1] != self.dim:
            raise ValueError(
                f"actions must be (B, {self.dim}) in the declared convention "
                f"({self.conv.describe(self.n_arm)}), got {a.shape}"
            )
        if self.identity:
            return a
        if not np.all(np.isfinite(a)):
            raise ValueError("actions contain NaN or inf")
        grip = self._gripper(a[:, -1], np.asarray(obs["gripper"], dtype=np.float64)[:, 0])
        c = self.conv
        if c.space == "joint_pos":
            arm = a[:, : self.n_arm]
        elif c.space == "joint_vel":
            arm = np.asarray(obs["joint_pos"], dtype=np.float64) + a[:, : self.n_arm] * self.dt
        else:
            pos, rot = a[:, :3], to_mat(a[:, 3:-1], c.rotation)
            if c.space == "osc_pose":  # inputs -> metres and radians
                pos = pos * OSC_SCALE[0]
                rot = axis_angle_to_mat(a[:, 3:6] * OSC_SCALE[1])
            if c.frame == "base":  # into the world frame
                pos = rows_times(pos, self.base.T)
                if c.space == "ee_pose":
                    pos = pos + self.base_pos
                    rot = self.base @ rot
                else:
                    rot = self.base @ rot @ self.base.T
            if c.space in ("ee_delta", "osc_pose"):
                arm = np.concatenate([pos, mat_to_axis_angle(rot)], axis=1)
            else:  # absolute pose -> the delta from where the end effector is now
                cur_pos = np.asarray(obs["ee_pos"], dtype=np.float64)
                cur = quat_to_mat(np.asarray(obs["ee_quat"], dtype=np.float64))
                dpos = pos - cur_pos
                drot = mat_to_axis_angle(rot @ np.swapaxes(cur, 1, 2))
                arm = np.concatenate([dpos, drot], axis=1)
        if self.env_space == "osc_pose":  # metres and radians -> OSC inputs, gripper -1 open
            arm = np.clip(arm / np.repeat(OSC_SCALE, 3), -1.0, 1.0)
            grip = 1.0 - 2.0 * grip
        return np.concatenate([arm, grip[:, None]], axis=1)

    def _gripper(self, g: np.ndarray, current: np.ndarray) -> np.ndarray:
        out = np.clip(GRIPPERS[self.conv.gripper].to_open1(g, current), 0.0, 1.0)
        if self.conv.binarize:
            out = (out >= 0.5).astype(np.float64)
        return out


def express(
    canonical: np.ndarray, obs: dict[str, Any], conv: ActionConvention, n_arm: int, dt: float
) -> np.ndarray:
    """The inverse of ActionConverter for world-frame conventions: a canonical action
    (ee_delta rotation vector or joint_pos, gripper open1) written in `conv` (what a
    policy trained in that convention outputs for the same motion; the tests use it)."""
    a = np.asarray(canonical, dtype=np.float64)
    g = a[:, -1]
    cur = np.asarray(obs["gripper"], dtype=np.float64)[:, 0]
    grip = GRIPPERS[conv.gripper].from_open1(g, cur)
    if conv.space in ("joint_pos", "joint_vel"):
        if a.shape[1] != n_arm + 1:
            raise ValueError("joint conventions need joint_pos canonical actions")
        arm = a[:, :n_arm]
        if conv.space == "joint_vel":
            arm = (arm - np.asarray(obs["joint_pos"], dtype=np.float64)) / dt
    else:
        if a.shape[1] != 7:
            raise ValueError("EEF conventions need ee_delta canonical actions")
        rot = axis_angle_to_mat(a[:, 3:6])
        pos = a[:, :3]
        if conv.space == "ee_pose":
            pos = np.asarray(obs["ee_pos"], dtype=np.float64) + pos
            rot = rot @ quat_to_mat(np.asarray(obs["ee_quat"], dtype=np.float64))
        arm = np.concatenate([pos, from_mat(rot, conv.rotation)], axis=1)
    return np.concatenate([arm, grip[:, None]], axis=1)
