"""The action-kind registry and the interface every kind implements.

An action kind says how a policy's action (B, dim) becomes the handler's inputs for one
control step: the actuator controls (B, nu), and, for kinds that drive a mocap body, the
mocap targets written before the physics substeps (`mocap`), or a host controller run
every substep (`substep`, torque control). Each kind is a class registered by name with
`@register_action_kind("name")` in a module of this package (or of a plug-in);
`metasim.control.actions.ActionController` looks the name up and delegates to it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypeVar

import numpy as np

from metasim.registry import Registry
from metasim.scene.compile import CompiledScene
from metasim.scene.robots import RobotDescriptor
from metasim.sim.base import Kinematics, Substep


@dataclass(frozen=True)
class KindOptions:
    """Guards of the IK-driven kinds (ee_delta): the most a joint target may move per
    control step (rad), the most it may lead the measured joint (rad), and the gain of the
    null-space pull toward the home pose."""

    max_joint_step: float = 0.35
    max_lead: float = 0.3
    nullspace_gain: float = 0.3


@dataclass(frozen=True)
class MocapCommand:
    """Mocap targets for the coming control step: positions pos (B, k, 3) of the mocap
    bodies with mocap ids `ids` (k,), and their orientations quat (B, k, 4) (w, x, y, z),
    or None to keep them."""

    ids: np.ndarray
    pos: np.ndarray
    quat: np.ndarray | None = None


class ActionKindBase(ABC):
    """One action kind for one compiled scene and `num_envs` envs.

    `controls`: the robot descriptor `control` values this kind can drive (`refusal` may
    check more). Actions reach `to_ctrl` already checked: (B, dim) and finite."""

    name: ClassVar[str] = ""
    controls: ClassVar[tuple[str, ...]] = ()

    def __init__(self, compiled: CompiledScene, num_envs: int, options: KindOptions) -> None:
        self.compiled = compiled
        self.num_envs = num_envs
        self.options = options
        self.index = compiled.index

    @classmethod
    def refusal(cls, robot: RobotDescriptor) -> str | None:
        """Why this kind cannot drive `robot` (None: it can)."""
        if robot.control not in cls.controls:
            return f"is driven by {robot.control} actuators"
        return None

    @property
    @abstractmethod
    def dim(self) -> int:
        """Width of one action."""

    @abstractmethod
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) of the action box, shape (dim,)."""

    @abstractmethod
    def hold_action(self, kin: Kinematics) -> np.ndarray:
        """(B, dim) the action that keeps the arm where it is and the gripper as it is."""

    @abstractmethod
    def to_ctrl(
        self, action: np.ndarray, kin: Kinematics, jac: np.ndarray, base_ctrl: np.ndarray
    ) -> np.ndarray:
        """ctrl (B, nu) from action (B, dim), the kinematics (B, ...), the end-effector
        Jacobian (B, 6, nv) and the previous ctrl (B, nu)."""

    def settle_action(self, n: int) -> np.ndarray:
        """(n, dim) for `n` envs: hold still with the gripper open, for the settle steps
        before a policy acts (only kinds whose zero action means 'stay')."""
        raise ValueError(
            f"settle steps need a delta action space (ee_delta, osc_pose or mocap_delta), "
            f"not {self.name!r}"
        )

    def reset(self, env_ids: np.ndarray, qpos: np.ndarray, stale: bool = True) -> None:
        """Envs `env_ids` start an episode in configurations qpos (len(ids), nq); kinds
        that keep per-env state reset it here (none by default)."""
        return None

    @property
    def substep(self) -> Substep | None:
        """The host controller the handler runs every physics substep, if any."""
        return None

    @property
    def mocap(self) -> MocapCommand | None:
        """The mocap targets the last `to_ctrl` set (the handler writes them before the
        physics substeps of the step), if this kind drives mocap bodies."""
        return None


K = TypeVar("K", bound=type[ActionKindBase])

# Kind name -> its class; every module of metasim.control.action_kinds (and of each
# plug-in) that defines a kind registers it with `register_action_kind`.
ACTION_KINDS: Registry[type[ActionKindBase]] = Registry(
    "action kind", packages=("metasim.control.action_kinds",)
)


def register_action_kind(name: str) -> Callable[[K], K]:
    """Class decorator: register an `ActionKindBase` subclass as kind `name`."""

    def deco(cls: K) -> K:
        cls.name = name
        ACTION_KINDS.register(name, cls)
        return cls

    return deco


def as_slice(index: np.ndarray | int) -> slice | np.ndarray | int:
    """`index` as a slice when it is a run of consecutive integers, else unchanged."""
    if isinstance(index, (int, np.integer)):
        return int(index)
    index = np.asarray(index)
    if len(index) and np.array_equal(index, np.arange(index[0], index[0] + len(index))):
        return slice(int(index[0]), int(index[0]) + len(index))
    return index


def native_kind(robot: RobotDescriptor) -> str:
    """The action kind a robot takes when none is asked for: `ee_delta` for position
    actuators, else the first registered kind that drives its control (`osc_pose`,
    `mocap_delta`)."""
    if robot.control == "position":
        return "ee_delta"
    for name, kind in ACTION_KINDS.items():
        if robot.control in kind.controls:
            return name
    raise ValueError(f"no action kind drives {robot.control!r} robots")
