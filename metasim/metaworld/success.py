"""Meta-World's `info["success"]`, per v3 task, as its `evaluate_state` computes it (read
from the package's `envs/sawyer_*_v3.py`, reward version v2, the default), batched:
`success(task, state) -> (B,) bool`.

Most tasks: a point of the task (mostly observation[4:7], the first object) within a
radius of the goal, over some axes, sometimes scaled per axis (`Near`). The rest need
their own check: a joint angle (lever-pull), a joint position (hammer), a height
(disassemble), the peg's funnel (assembly), the stick in the handle (stick-pull), and a
grasp, i.e. contact, with the push (stick-push). The package computes success from the
clipped observation, but only from parts the clip cannot change (objects are unbounded,
the gripper distance already lies in [0, 1]).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from metasim.metaworld.objects import OBJECTS, body, site
from metasim.metaworld.state import MwState, PosFn
from metasim.registry import Registry

SuccessFn = Callable[[MwState], np.ndarray]  # state -> (B,) bool
SUCCESS: Registry[SuccessFn] = Registry("Meta-World task")

XYZ, X, Y, Z = (1.0, 1.0, 1.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)


def first_object(task: str) -> PosFn:
    """The task's observation[4:7]."""
    return OBJECTS[task][0].pos


@dataclass(frozen=True)
class Near:
    """‖scale * (point - goal)‖ <= radius (< with `strict`); goal: the target, or
    `goal_z`'s fixed height in place of the target's."""

    point: PosFn
    radius: float
    scale: tuple[float, float, float] = XYZ
    strict: bool = False
    goal_z: float | None = None

    def __call__(self, s: MwState) -> np.ndarray:
        goal = s.target
        if self.goal_z is not None:
            goal = goal.copy()
            goal[:, 2] = self.goal_z
        d = (self.point(s) - goal) * np.array(self.scale)
        dist = np.sqrt(np.sum(d * d, axis=1))
        return dist < self.radius if self.strict else dist <= self.radius


def assembly(s: MwState) -> np.ndarray:
    """The nut's centre (site RoundNut) within 0.02 of the peg (target) in x-y and below
    the target's height ("aligned and hooked")."""
    err = s.target - s.site_pos("RoundNut")
    return (np.sqrt(np.sum(err[:, :2] ** 2, axis=1)) < 0.02) & (err[:, 2] > 0.0)


def disassemble(s: MwState) -> np.ndarray:
    """The nut's grasp point (observation[6]) above the target's height."""
    return s.site_pos("RoundNut-8")[:, 2] > s.target[:, 2]


def hammer(s: MwState) -> np.ndarray:
    """The nail driven: its slide joint past 0.09."""
    return s.joint_qpos("NailSlideJoint") > 0.09


def lever_pull(s: MwState) -> np.ndarray:
    """The lever's angle (minus joint LeverAxis) within pi/24 of pi/2."""
    return np.abs(-s.joint_qpos("LeverAxis") - np.pi / 2.0) <= np.pi / 24


def stick_pull(s: MwState) -> np.ndarray:
    """The handle (site insertion) within 0.12 of the target, and the stick's end in it:
    end x >= handle x, |dy| <= 0.04, |dz| <= 0.06."""
    handle, end = s.site_pos("insertion"), s.site_pos("stick_end")
    d = handle - s.target
    near = np.sqrt(np.sum(d * d, axis=1)) <= 0.12
    inside = (end[:, 0] >= handle[:, 0]) & (np.abs(end[:, 1] - handle[:, 1]) <= 0.040)
    return near & inside & (np.abs(end[:, 2] - handle[:, 2]) <= 0.060)


def stick_push(s: MwState) -> np.ndarray:
    """The container (observation[11:14]) within 0.12 of the target AND a grasp: both
    pads pressing on the stick (`MwState.touching`), the gripper open (observation[3] >
    0) and the stick lifted 1 cm above its height at reset."""
    container = s.site_pos("insertion") + np.array([0.0, 0.09, 0.0])
    d = container - s.target
    near = np.sqrt(np.sum(d * d, axis=1)) <= 0.12
    if s.touching is None:
        raise ValueError("stick-push-v3's success needs the pads' contact: pass touching")
    lifted = s.body_pos("stick")[:, 2] - 0.01 > s.init_body_pos("stick")[:, 2]
    return near & np.asarray(s.touching, dtype=bool) & (s.gripper_distance() > 0) & lifted


def _tcp(s: MwState) -> np.ndarray:
    return s.tcp_center()


def _first(radius: float, scale: tuple[float, float, float] = XYZ) -> Callable[[str], Near]:
    return lambda task: Near(first_object(task), radius, scale)


# Tasks whose success is the first object near the goal: radius and axes. A radius is
# the literal in the task's evaluate_state, or its class's TARGET_RADIUS (0.05 unless the
# class overrides it: basketball 0.08, dial-turn 0.07, handle-press(-side) 0.02).
_BY_FIRST_OBJECT: dict[str, Callable[[str], Near]] = {
    "bin-picking-v3": _first(0.05),
    "button-press-topdown-v3": _first(0.024, Z),
    "button-press-topdown-wall-v3": _first(0.024, Z),
    "button-press-v3": _first(0.02, Y),
    "button-press-wall-v3": _first(0.03, Y),
    "coffee-button-v3": _first(0.02, Y),
    "coffee-pull-v3": _first(0.07),
    "coffee-push-v3": _first(0.07),
    "dial-turn-v3": _first(0.07),
    "door-close-v3": _first(0.08),
    "door-lock-v3": _first(0.02, Z),
    "door-open-v3": _first(0.08, X),
    "door-unlock-v3": _first(0.02, X),
    "drawer-close-v3": _first(0.065),
    "drawer-open-v3": _first(0.03),
    "faucet-close-v3": _first(0.07),
    "hand-insert-v3": _first(0.05),
    "handle-press-side-v3": _first(0.02, Z),
    "handle-press-v3": _first(0.02, Z),
    "handle-pull-side-v3": _first(0.08),
    "handle-pull-v3": _first(0.05, Z),
    "peg-unplug-side-v3": _first(0.07),
    "pick-out-of-hole-v3": _first(0.07),
    "pick-place-v3": _first(0.07),
    "pick-place-wall-v3": _first(0.07),
    "plate-slide-back-side-v3": _first(0.07),
    "plate-slide-back-v3": _first(0.07),
    "plate-slide-side-v3": _first(0.07),
    "plate-slide-v3": _first(0.07),
    "push-back-v3": _first(0.07),
    "push-v3": _first(0.05),
    "push-wall-v3": _first(0.07),
    "shelf-place-v3": _first(0.07),
    "soccer-v3": _first(0.07),
    "sweep-into-v3": _first(0.05, (1.0, 1.0, 0.0)),  # the goal at the object's height
    "sweep-v3": _first(0.05),
    "window-close-v3": _first(0.05, X),
    "window-open-v3": _first(0.05, X),
}

_OTHERS: dict[str, SuccessFn] = {
    "assembly-v3": assembly,
    # The basket's rim: the target at height 0.3, z weighted twice.
    "basketball-v3": Near(body("bsktball"), 0.08, (1.0, 1.0, 2.0), goal_z=0.3),
    "box-close-v3": Near(body("top_link"), 0.08, strict=True),
    "disassemble-v3": disassemble,
    # The handle's tip, 4 cm back and 3 cm up from observation[4:7].
    "faucet-open-v3": Near(site("handleStartOpen", (-0.04, 0.0, 0.02)), 0.07),
    "hammer-v3": hammer,
    "lever-pull-v3": lever_pull,
    # The peg's head (not its grasp point), y and z weighted twice.
    "peg-insert-side-v3": Near(site("pegHead"), 0.07, (1.0, 2.0, 2.0)),
    "reach-v3": Near(_tcp, 0.05),
    "reach-wall-v3": Near(_tcp, 0.05),
    "stick-pull-v3": stick_pull,
    "stick-push-v3": stick_push,
}

for _task, _make in _BY_FIRST_OBJECT.items():
    SUCCESS.register(_task, _make(_task))
for _task, _fn in _OTHERS.items():
    SUCCESS.register(_task, _fn)
assert {n for n, _ in SUCCESS.registered()} == set(OBJECTS), "every task needs a success check"


def success(task: str, state: MwState) -> np.ndarray:
    """(B,) bool: Meta-World's info["success"] for `task` in each env of `state`.
    An unknown task name raises `UnknownName` listing the 50."""
    return np.asarray(SUCCESS[task](state), dtype=bool)
