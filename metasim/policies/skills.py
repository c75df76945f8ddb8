"""The scripted expert's skills: each a list of phases (a target for the grasp site, a
gripper command, a yaw to align the gripper to, a condition to move on), built from the
scene's `task.expert` and the policy context. `ObsView` names the observation terms the
phases read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from metasim.policies.base import PolicyContext
from metasim.policies.grasp import closing_yaw, grasp_geometry
from metasim.rotations import quat_yaw
from metasim.scene.schema import DrawerSpec, ExpertSpec

OPEN, CLOSED = 1.0, 0.0
DESIGN_DT = 0.05  # the control period the phases' per-step numbers are written for (20 Hz)
DOWN = np.diag([1.0, -1.0, -1.0])  # grasp site pointing down, fingers closing along world y


class ObsView:
    """Named access into one observation batch, with the yaws several phases read computed
    once per batch (`once`)."""

    def __init__(self, obs: dict[str, Any], ctx: PolicyContext) -> None:
        self.p = obs["policy"]
        self.s = obs["privileged"]
        self.ctx = ctx
        self._once: dict[tuple[Any, ...], np.ndarray] = {}

    def once(self, key: tuple[Any, ...], fn: Callable[[], np.ndarray]) -> np.ndarray:
        """`fn()` the first time `key` is asked of this batch, then the same (read-only)
        array: e.g. an object's closing yaw, which each phase aligning to it reads."""
        out = self._once.get(key)
        if out is None:
            out = self._once[key] = np.asarray(fn())
            out.setflags(write=False)
        return out

    @property
    def ee(self) -> np.ndarray:
        return np.asarray(self.p["ee_pos"])

    def obj(self, name: str) -> np.ndarray:
        return np.asarray(self.s["object_pos"][:, self.ctx.object_names.index(name)])

    def obj_quat(self, name: str) -> np.ndarray:
        """(B, 4) orientation (w, x, y, z) of object `name`."""
        return np.asarray(self.s["object_quat"][:, self.ctx.object_names.index(name)])

    def obj_yaw(self, name: str) -> np.ndarray:
        return quat_yaw(self.s["object_quat"][:, self.ctx.object_names.index(name)])

    def point(self, name: str) -> np.ndarray:
        """Position of an object, a fixture site or a fixture body, by name."""
        if name in self.ctx.object_names:
            return self.obj(name)
        if name in self.ctx.fixture_sites:
            return np.asarray(self.s["fixture_site_pos"][:, self.ctx.fixture_sites.index(name)])
        return np.asarray(self.s["fixture_body_pos"][:, self.ctx.fixture_bodies.index(name)])

    def joint_fraction(self, fixture: str) -> np.ndarray:
        c = self.ctx.compiled
        j = c.joint_ref(fixture)
        lo, hi = c.index.joint_range[j]
        return (np.asarray(self.s["fixture_qpos"][:, j]) - lo) / (hi - lo)


Target = Callable[[ObsView, np.ndarray], np.ndarray]  # (view, anchor (B, 3)) -> (B, 3)
Until = Callable[[ObsView], np.ndarray]
YawFn = Callable[[ObsView], np.ndarray]  # (view) -> (B,) yaw the gripper aligns to


@dataclass(frozen=True)
class Align:
    """Gripper yaw target: `yaw` modulo `period` (the symmetry of what it aligns to); of
    the equivalent yaws the one nearest the gripper's current yaw is taken, so the target
    never jumps by a period. No `yaw`: the world's x axis (the gripper's home yaw)."""

    yaw: YawFn | None = None
    period: float = np.pi  # the parallel gripper itself is 2-fold symmetric


@dataclass(frozen=True)
class Phase:
    name: str
    target: Target
    gripper: float
    tol: float | None = 0.01  # move on once the grasp site is this close (None: never)
    wait: int = 0  # stay at least this many steps
    until: Until | None = None  # or move on when this holds
    max_steps: int = 80  # give up waiting and move on
    speed: float = 0.025  # metres per control step at most
    align: Align = Align()


def _half_z(ctx: PolicyContext, name: str) -> float:
    if name in ctx.object_names:
        return float(ctx.compiled.index.object_half[ctx.object_names.index(name), 2])
    return 0.0


def grip_yaw(v: ObsView) -> np.ndarray:
    """(B,) yaw of the gripper (0 at home: fingers closing along world y)."""
    return v.once(("grip_yaw",), lambda: quat_yaw(v.p["ee_quat"]))


def wrap_angle(angle: np.ndarray, period: float) -> np.ndarray:
    """`angle` reduced to [-period/2, period/2)."""
    return np.asarray((angle + period / 2) % period - period / 2)


def object_align(ctx: PolicyContext, name: str) -> Align:
    """How the gripper aligns to grasp object `name`: closing along the axis that
    `grasp_geometry` chooses, modulo its symmetry; round objects about the vertical
    need no alignment."""
    geom = grasp_geometry(ctx, name)
    axis = geom.axis
    if axis is None:
        return Align()
    return Align(
        lambda v: v.once(("closing_yaw", name), lambda: closing_yaw(v.obj_quat(name), axis)),
        geom.period,
    )


def fixture_yaw(ctx: PolicyContext, name: str) -> float:
    """Yaw of the fixture that `name` (a fixture, or one of its bodies or sites) belongs to."""
    for fx in ctx.compiled.scene.fixtures:
        if name == fx.name or name.startswith(fx.name + "/"):
            return float(getattr(fx, "yaw", 0.0))
    return 0.0


def place_align(ctx: PolicyContext, obj: str, target: str) -> Align:
    """Turn the held object `obj` so that its sides line up with the target's (the other
    object's, or the fixture's axes), modulo the held object's symmetry."""
    held = object_align(ctx, obj)
    if held.yaw is None:
        return Align(grip_yaw)  # round: keep the gripper as it is
    if target in ctx.object_names:
        tgt = object_align(ctx, target).yaw
        if tgt is None:
            return Align(grip_yaw)
        target_yaw: YawFn = tgt
    else:
        const = fixture_yaw(ctx, target)
        target_yaw = lambda v: np.full(v.ee.shape[0], const)  # noqa: E731
    return Align(
        lambda v: grip_yaw(v) + wrap_angle(target_yaw(v) - v.obj_yaw(obj), held.period), held.period
    )


def pick_phases(ctx: PolicyContext, obj: str, carry: float) -> list[Phase]:
    """Approach over the object (high enough to clear a tall one), descend to the grasp
    height `grasp_geometry` chooses, close across the chosen side, lift by `carry`."""
    geom = grasp_geometry(ctx, obj)
    grasp_dz, hover = geom.grasp_dz, geom.hover
    up = np.array([0.0, 0.0, 1.0])
    al = object_align(ctx, obj)
    hold = Align(grip_yaw)
    return [
        Phase(
            "approach", lambda v, a: v.obj(obj) + hover * up, OPEN, tol=0.02, speed=0.03, align=al
        ),
        # centred within a few mm before going down: a wide object leaves the open
        # fingers ~6 mm either side, and a finger that lands on its top stalls the descent
        Phase(
            "centre",
            lambda v, a: v.obj(obj) + hover * up,
            OPEN,
            tol=0.004,
            max_steps=30,
            speed=0.01,
            align=al,
        ),
        Phase(
            "descend",
            lambda v, a: v.obj(obj) + grasp_dz * up,
            OPEN,
            tol=0.007,
            speed=0.015,
            align=al,
        ),
        Phase("close", lambda v, a: a, CLOSED, tol=None, wait=8, max_steps=8, align=hold),
        Phase("lift", lambda v, a: a + carry * up, CLOSED, tol=0.02, speed=0.02, align=hold),
    ]


def place_phases(
    ctx: PolicyContext, obj: str, target: str, offset: np.ndarray, carry_z: float
) -> list[Phase]:
    up = np.array([0.0, 0.0, 1.0])
    al = place_align(ctx, obj, target)
    hold = Align(grip_yaw)

    def above(v: ObsView, a: np.ndarray) -> np.ndarray:
        p = v.point(target) + offset
        p[:, 2] = np.maximum(p[:, 2], carry_z)
        return np.asarray(p)

    return [
        Phase("carry", above, CLOSED, tol=0.015, speed=0.025, align=al),
        Phase(
            "lower", lambda v, a: v.point(target) + offset, CLOSED, tol=0.01, speed=0.015, align=al
        ),
        Phase("release", lambda v, a: a, OPEN, tol=None, wait=6, max_steps=6, align=hold),
        Phase("retreat", lambda v, a: a + 0.1 * up, OPEN, tol=0.02, align=hold),
    ]


def push_phases(
    ctx: PolicyContext, obj: str, target: str, offset: np.ndarray, attempts: int = 4
) -> list[Phase]:
    """Push `obj` to the target with the closed gripper, in up to `attempts` strokes.

    The pusher moves along the object-to-goal direction (the contact sticks by friction,
    so the object goes where the pusher goes) while steering onto the line through the
    object's centre; when the object slips off the pusher, it lifts, goes around behind
    the object again and pushes anew."""
    half = float(np.max(ctx.compiled.index.object_half[ctx.object_names.index(obj), :2]))
    z = max(0.0, 0.023 - _half_z(ctx, obj))  # the pads' lower ends 3 mm over the table
    up = np.array([0.0, 0.0, 1.0])

    def goal(v: ObsView) -> np.ndarray:
        return np.asarray(v.point(target) + offset)

    def direction(v: ObsView) -> np.ndarray:
        d = (goal(v) - v.obj(obj))[:, :2]
        d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-6)
        return np.concatenate([d, np.zeros((len(d), 1))], axis=1)

    def behind(v: ObsView, lift: float) -> np.ndarray:
        p = v.obj(obj) - direction(v) * (half + 0.03)
        p[:, 2] = v.obj(obj)[:, 2] + z + lift
        return np.asarray(p)

    def offsets(v: ObsView) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(direction, distance along it from pusher to object, lateral offset vector)."""
        d = direction(v)
        rel = v.obj(obj) - v.ee
        rel[:, 2] = 0.0
        along = np.sum(rel * d, axis=1)
        return d, along, rel - along[:, None] * d

    def push(v: ObsView, a: np.ndarray) -> np.ndarray:
        d, _, lateral = offsets(v)
        p = v.ee + 0.01 * d + 1.5 * lateral  # this step's move: forward, and onto the line
        p[:, 2] = v.obj(obj)[:, 2] + z
        return np.asarray(p)

    def arrived(v: ObsView) -> np.ndarray:
        return np.asarray(np.linalg.norm((goal(v) - v.obj(obj))[:, :2], axis=1) < 0.012)

    def slipped(v: ObsView) -> np.ndarray:
        _, along, lateral = offsets(v)
        lost = (along > half + 0.045) | (np.linalg.norm(lateral, axis=1) > 0.015)
        return np.asarray(lost | arrived(v))

    sides = object_align(ctx, obj)

    def face(v: ObsView) -> np.ndarray:
        """Gripper yaw that puts the pads' flat side on the object's face that is pushed
        (the face whose normal is nearest the push direction)."""
        d = direction(v)
        ang = np.arctan2(d[:, 1], d[:, 0])
        if sides.yaw is None:
            return np.asarray(ang)
        normals = sides.yaw(v)
        return np.asarray(normals + wrap_angle(ang - normals, sides.period))

    al = Align(face, np.pi)
    phases: list[Phase] = []
    for i in range(attempts):
        if i:
            phases.append(
                Phase(f"lift{i}", lambda v, a: a + 0.06 * up, CLOSED, tol=0.015, align=al)
            )
        phases += [
            Phase(
                f"above{i}", lambda v, a: behind(v, 0.08), CLOSED, tol=0.015, speed=0.03, align=al
            ),
            Phase(
                f"down{i}", lambda v, a: behind(v, 0.0), CLOSED, tol=0.008, speed=0.015, align=al
            ),
            Phase(
                f"push{i}",
                push,
                CLOSED,
                tol=None,
                until=slipped,
                max_steps=150,
                speed=0.02,
                align=al,
            ),
        ]
    phases.append(Phase("retreat", lambda v, a: a + 0.1 * up, OPEN, tol=0.02, align=al))
    return phases


def drawer_phases(ctx: PolicyContext, fixture: str, opening: bool) -> list[Phase]:
    spec = next(f for f in ctx.compiled.scene.fixtures if f.name == fixture)
    assert isinstance(spec, DrawerSpec)
    pull = np.array([-np.cos(spec.yaw), -np.sin(spec.yaw), 0.0])  # the opening direction
    handle = f"{fixture}/handle"
    up = np.array([0.0, 0.0, 1.0])
    al = Align(lambda v: np.full(v.ee.shape[0], spec.yaw), np.pi)
    if opening:
        return [
            Phase("approach", lambda v, a: v.point(handle) + 0.08 * up, OPEN, tol=0.015, align=al),
            Phase("descend", lambda v, a: v.point(handle), OPEN, tol=0.006, speed=0.012, align=al),
            Phase(
                "grip",
                lambda v, a: v.point(handle),
                CLOSED,
                tol=None,
                wait=8,
                max_steps=8,
                align=al,
            ),
            Phase(
                "pull",
                lambda v, a: v.point(handle) + 0.05 * pull,
                CLOSED,
                tol=None,
                until=lambda v: v.joint_fraction(fixture) > 0.95,
                max_steps=120,
                speed=0.012,
                align=al,
            ),
            Phase("release", lambda v, a: a, OPEN, tol=None, wait=6, max_steps=6, align=al),
            Phase("retreat", lambda v, a: a + 0.1 * up + 0.05 * pull, OPEN, tol=0.02, align=al),
        ]
    stand = 0.062  # from the handle site to the pads' centre just in front of the cap
    return [
        Phase(
            "approach",
            lambda v, a: v.point(handle) + stand * pull + 0.08 * up,
            CLOSED,
            tol=0.015,
            align=al,
        ),
        Phase(
            "descend",
            lambda v, a: v.point(handle) + stand * pull,
            CLOSED,
            tol=0.006,
            speed=0.012,
            align=al,
        ),
        Phase(
            "push",
            lambda v, a: v.point(handle) - 0.02 * pull,
            CLOSED,
            tol=None,
            until=lambda v: v.joint_fraction(fixture) < 0.02,
            max_steps=120,
            speed=0.012,
            align=al,
        ),
        Phase("retreat", lambda v, a: a + 0.1 * up + 0.05 * pull, CLOSED, tol=0.02, align=al),
    ]


def skill_phases(ctx: PolicyContext, exp: ExpertSpec) -> list[Phase]:
    """The phase program of a skill."""
    offset = np.asarray(exp.target_offset)
    if exp.skill == "pick_lift":
        assert exp.object is not None
        return pick_phases(ctx, exp.object, exp.lift)
    if exp.skill == "pick_place":
        assert exp.object is not None and exp.target is not None
        carry_z = 0.22  # above every built-in fixture's walls
        return pick_phases(ctx, exp.object, exp.lift) + place_phases(
            ctx, exp.object, exp.target, offset, carry_z
        )
    if exp.skill == "push":
        assert exp.object is not None and exp.target is not None
        return push_phases(ctx, exp.object, exp.target, offset)
    if exp.skill == "open_door":
        raise ValueError("the scripted expert has no open_door skill (a benchmark's own has)")
    assert exp.fixture is not None
    return drawer_phases(ctx, exp.fixture, exp.skill == "open_drawer")
