"""The built-in scripted expert: state-based waypoint programs tracked through IK.

Each task's YAML names a skill (`task.expert`); a skill is a list of phases, each with a
target for the grasp site, a gripper command and a condition to move on. Every env runs
its own phase counter, so envs that reset at different times stay independent. Actions
are end-effector deltas (`ee_delta`), gripper in the canonical convention (1 = open).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from metasim.policies.base import PolicyContext, register_policy
from metasim.rotations import axis_angle_to_mat, mat_to_axis_angle, quat_to_mat, yaw_of
from metasim.scene.schema import DrawerSpec, ExpertSpec

OPEN, CLOSED = 1.0, 0.0
DOWN = np.diag([1.0, -1.0, -1.0])  # grasp site pointing down, fingers closing along world y


class ObsView:
    """Named access into one observation batch."""

    def __init__(self, obs: dict[str, Any], ctx: PolicyContext) -> None:
        self.p = obs["policy"]
        self.s = obs["privileged"]
        self.ctx = ctx

    @property
    def ee(self) -> np.ndarray:
        return np.asarray(self.p["ee_pos"])

    def obj(self, name: str) -> np.ndarray:
        return np.asarray(self.s["object_pos"][:, self.ctx.object_names.index(name)])

    def obj_yaw(self, name: str) -> np.ndarray:
        quat = self.s["object_quat"][:, self.ctx.object_names.index(name)]
        return yaw_of(quat_to_mat(quat))

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


def _half_z(ctx: PolicyContext, name: str) -> float:
    if name in ctx.object_names:
        return float(ctx.compiled.index.object_half[ctx.object_names.index(name), 2])
    return 0.0


def pick_phases(ctx: PolicyContext, obj: str, carry: float) -> list[Phase]:
    grasp_dz = max(0.0, 0.022 - _half_z(ctx, obj))  # keep the fingertips off the table
    up = np.array([0.0, 0.0, 1.0])
    return [
        Phase("approach", lambda v, a: v.obj(obj) + 0.1 * up, OPEN, tol=0.02, speed=0.03),
        Phase("descend", lambda v, a: v.obj(obj) + grasp_dz * up, OPEN, tol=0.007, speed=0.015),
        Phase("close", lambda v, a: a, CLOSED, tol=None, wait=8, max_steps=8),
        Phase("lift", lambda v, a: a + carry * up, CLOSED, tol=0.02, speed=0.02),
    ]


def place_phases(ctx: PolicyContext, target: str, offset: np.ndarray, carry_z: float) -> list[Phase]:
    up = np.array([0.0, 0.0, 1.0])

    def above(v: ObsView, a: np.ndarray) -> np.ndarray:
        p = v.point(target) + offset
        p[:, 2] = np.maximum(p[:, 2], carry_z)
        return np.asarray(p)

    return [
        Phase("carry", above, CLOSED, tol=0.015, speed=0.025),
        Phase("lower", lambda v, a: v.point(target) + offset, CLOSED, tol=0.01, speed=0.015),
        Phase("release", lambda v, a: a, OPEN, tol=None, wait=6, max_steps=6),
        Phase("retreat", lambda v, a: a + 0.1 * up, OPEN, tol=0.02),
    ]


def push_phases(ctx: PolicyContext, obj: str, target: str, offset: np.ndarray) -> list[Phase]:
    half = float(np.max(ctx.compiled.index.object_half[ctx.object_names.index(obj), :2]))
    z = max(0.0, 0.024 - _half_z(ctx, obj))

    def direction(v: ObsView) -> np.ndarray:
        d = (v.point(target) + offset - v.obj(obj))[:, :2]
        d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-6)
        return np.concatenate([d, np.zeros((len(d), 1))], axis=1)

    def behind(v: ObsView, a: np.ndarray, lift: float) -> np.ndarray:
        p = v.obj(obj) - direction(v) * (half + 0.035)
        p[:, 2] = v.obj(obj)[:, 2] + z + lift
        return np.asarray(p)

    def push(v: ObsView, a: np.ndarray) -> np.ndarray:
        p = v.obj(obj) + direction(v) * (0.02 - half - 0.012)
        p[:, 2] = v.obj(obj)[:, 2] + z
        return np.asarray(p)

    def arrived(v: ObsView) -> np.ndarray:
        return np.asarray(np.linalg.norm((v.point(target) + offset - v.obj(obj))[:, :2], axis=1) < 0.012)

    return [
        Phase("above", lambda v, a: behind(v, a, 0.08), CLOSED, tol=0.015, speed=0.03),
        Phase("down", lambda v, a: behind(v, a, 0.0), CLOSED, tol=0.008, speed=0.015),
        Phase("push", push, CLOSED, tol=None, until=arrived, max_steps=200, speed=0.008),
        Phase("retreat", lambda v, a: a + np.array([0, 0, 0.1]), OPEN, tol=0.02),
    ]


def drawer_phases(ctx: PolicyContext, fixture: str, opening: bool) -> list[Phase]:
    spec = next(f for f in ctx.compiled.scene.fixtures if f.name == fixture)
    assert isinstance(spec, DrawerSpec)
    pull = np.array([-np.cos(spec.yaw), -np.sin(spec.yaw), 0.0])  # the opening direction
    handle = f"{fixture}/handle"
    up = np.array([0.0, 0.0, 1.0])
    if opening:
        return [
            Phase("approach", lambda v, a: v.point(handle) + 0.08 * up, OPEN, tol=0.015),
            Phase("descend", lambda v, a: v.point(handle), OPEN, tol=0.006, speed=0.012),
            Phase("grip", lambda v, a: v.point(handle), CLOSED, tol=None, wait=8, max_steps=8),
            Phase("pull", lambda v, a: v.point(handle) + 0.05 * pull, CLOSED, tol=None,
                  until=lambda v: v.joint_fraction(fixture) > 0.95, max_steps=120, speed=0.012),
            Phase("release", lambda v, a: a, OPEN, tol=None, wait=6, max_steps=6),
            Phase("retreat", lambda v, a: a + 0.1 * up + 0.05 * pull, OPEN, tol=0.02),
        ]
    stand = 0.062  # from the handle site to the pads' centre just in front of the cap
    return [
        Phase("approach", lambda v, a: v.point(handle) + stand * pull + 0.08 * up, CLOSED, tol=0.015),
        Phase("descend", lambda v, a: v.point(handle) + stand * pull, CLOSED, tol=0.006, speed=0.012),
        Phase("push", lambda v, a: v.point(handle) - 0.02 * pull, CLOSED, tol=None,
              until=lambda v: v.joint_fraction(fixture) < 0.02, max_steps=120, speed=0.012),
        Phase("retreat", lambda v, a: a + 0.1 * up + 0.05 * pull, CLOSED, tol=0.02),
    ]


def skill_phases(ctx: PolicyContext, exp: ExpertSpec) -> tuple[list[Phase], str | None]:
    """The phase program of a skill, and the object whose yaw the gripper aligns to."""
    offset = np.asarray(exp.target_offset)
    if exp.skill == "pick_lift":
        assert exp.object is not None
        return pick_phases(ctx, exp.object, exp.lift), exp.object
    if exp.skill == "pick_place":
        assert exp.object is not None and exp.target is not None
        carry_z = 0.22  # above every built-in fixture's walls
        phases = pick_phases(ctx, exp.object, exp.lift) + place_phases(ctx, exp.target, offset, carry_z)
        return phases, exp.object
    if exp.skill == "push":
        assert exp.object is not None and exp.target is not None
        return push_phases(ctx, exp.object, exp.target, offset), None
    assert exp.fixture is not None
    return drawer_phases(ctx, exp.fixture, exp.skill == "open_drawer"), None


class ScriptedExpert:
    """Vectorized phase machine: one phase counter, anchor and step count per env."""

    action_space = "ee_delta"

    def __init__(self, ctx: PolicyContext) -> None:
        exp = ctx.compiled.scene.task.expert
        if exp is None:
            raise ValueError(
                f"scene {ctx.compiled.scene.name!r} declares no 'task.expert', so the scripted "
                "expert cannot run it"
            )
        if ctx.action_space != "ee_delta":
            raise ValueError("the scripted expert drives the 'ee_delta' action space")
        self.ctx = ctx
        self.phases, self.align_to = skill_phases(ctx, exp)
        n = ctx.num_envs
        self.phase = np.zeros(n, dtype=np.int64)
        self.count = np.zeros(n, dtype=np.int64)
        self.anchor = np.zeros((n, 3))
        self.fresh = np.ones(n, dtype=bool)  # anchor not yet captured for the current phase

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None:
        ids = np.arange(self.ctx.num_envs) if env_ids is None else np.asarray(env_ids)
        self.phase[ids] = 0
        self.count[ids] = 0
        self.fresh[ids] = True

    def _yaw_target(self, v: ObsView) -> np.ndarray:
        if self.align_to is None:
            return np.zeros(v.ee.shape[0])
        yaw = v.obj_yaw(self.align_to)
        cur = quat_to_mat(np.asarray(v.p["ee_quat"]))
        grip_yaw = np.arctan2(cur[:, 1, 0], cur[:, 0, 0])
        # A 4-fold symmetric object: of its yaws modulo 90 degrees take the one nearest the
        # gripper's, so the target never flips by 90 degrees near the +-45 degree wrap.
        quarter = np.pi / 2
        return np.asarray(yaw + quarter * np.round((grip_yaw - yaw) / quarter))

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        v = ObsView(obs, self.ctx)
        ee = v.ee
        n = ee.shape[0]
        self.anchor[self.fresh] = ee[self.fresh]
        self.fresh[:] = False
        action = np.zeros((n, 7))
        last = len(self.phases) - 1
        for k, ph in enumerate(self.phases):
            sel = self.phase == k
            if not sel.any():
                continue
            target = ph.target(v, self.anchor)[sel]
            err = target - ee[sel]
            dist = np.linalg.norm(err, axis=1, keepdims=True)
            action[sel, :3] = err * np.minimum(1.0, ph.speed / np.maximum(dist, 1e-9))
            action[sel, 6] = ph.gripper
            self.count[sel] += 1
            done = self.count[sel] >= ph.wait
            if ph.tol is not None:
                done &= dist[:, 0] < ph.tol
            else:
                done &= ph.until is None
            if ph.until is not None:
                done |= ph.until(v)[sel] & (self.count[sel] >= ph.wait)
            done |= self.count[sel] >= ph.max_steps
            ids = np.flatnonzero(sel)[done & (k < last)]
            self.phase[ids] += 1
            self.count[ids] = 0
            self.fresh[ids] = True
        action[:, 3:6] = self._rotation(v, ee)
        return action[:, None, :]

    def _rotation(self, v: ObsView, ee: np.ndarray) -> np.ndarray:
        yaw = self._yaw_target(v)
        cur = quat_to_mat(np.asarray(v.p["ee_quat"]))
        rz = axis_angle_to_mat(np.stack([np.zeros_like(yaw), np.zeros_like(yaw), yaw], axis=1))
        goal = rz @ DOWN
        err = mat_to_axis_angle(goal @ np.swapaxes(cur, 1, 2))
        norm = np.linalg.norm(err, axis=1, keepdims=True)
        return np.asarray(err * np.minimum(1.0, 0.15 / np.maximum(norm, 1e-9)))


@register_policy("scripted")
def _scripted(ctx: PolicyContext) -> ScriptedExpert:
    return ScriptedExpert(ctx)
