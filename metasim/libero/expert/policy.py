"""`policy=libero_expert`: a state-based scripted expert for LIBERO's pick-and-place tasks,
driving LIBERO's own controller (`osc_pose`: xyz x 0.05 m and axis-angle x 0.5 rad
relative to the current end-effector pose, world frame; gripper -1 open, +1 close).

It reads the goal from the scene (`metasim.libero.expert.plan.place_goal`: one object
onto an object or a region, or into a region) and the object and target poses from the
privileged observation, and runs a phase machine per env: approach above the grasp,
descend, close, lift above everything, carry the object over the target, lower it,
open, retreat. The hand points down throughout, its yaw set so the fingers close across
the object's narrow side (or along a wide object's radius, pinching its wall on the side,
and with the finger opening, that leave the most room to the fixtures' geoms:
`metasim.libero.expert.clearance`); an object under a fixture's overhang is slid out
from under it before the lift. A grasp
that slips, or a placement that does not hold once the hand is away, starts over (up to
`RETRIES` times). Proportional control on the end-effector error, clipped to [-1, 1].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metasim.envs.vec_env import CameraView
from metasim.libero.expert.clearance import GripClearance, overhang_escape, world_aabb
from metasim.libero.expert.plan import (
    PINCH_WIDTHS,
    PlaceGoal,
    Surroundings,
    place_goal,
    plan_grasp,
)
from metasim.policies.base import PolicyContext, PolicyOptions, register_policy
from metasim.policies.conventions import GRIPPERS
from metasim.robosuite.expert_machine import down_frame
from metasim.rotations import mat_to_axis_angle, quat_to_mat

APPROACH, DESCEND, CLOSE, LIFT, CARRY, LOWER, RELEASE, RETREAT = range(8)
POS_SCALE, ROT_SCALE = 0.05, 0.5  # osc_pose input 1 = 0.05 m, 0.5 rad
POS_GAIN, ROT_GAIN = 2.0, 1.5  # action per unit of error, in input units
RETRIES = 3
HOVER = 0.08  # approach this far above the grasp point
# The per-env state of the phase machine.
STATE = (
    "phase",
    "count",
    "retries",
    "anchor",
    "hold",
    "grip_h",
    "carry_z",
    "closing",
    "prev_ee",
    "side",
    "opening",
    "escape",
)
HOLD_SLIP = 0.035  # the object has left the hand once it is this far from where it was held


def wrap(angle: np.ndarray, period: np.ndarray | float) -> np.ndarray:
    """`angle` reduced to [-period/2, period/2)."""
    return np.asarray((angle + period / 2) % period - period / 2)


def _capped(vec: np.ndarray, cap: np.ndarray | float) -> np.ndarray:
    """(B, 3) vectors scaled down to norm `cap` at most."""
    norm = np.linalg.norm(vec, axis=1, keepdims=True)
    return np.asarray(
        vec * np.minimum(1.0, np.asarray(cap).reshape(-1, 1) / np.maximum(norm, 1e-9))
    )


def _path_tops(
    center: np.ndarray,
    half: np.ndarray,
    held: int | None,
    start: np.ndarray,
    end: np.ndarray,
    reach: np.ndarray | float = 0.10,
) -> np.ndarray:
    """(B,) highest top of the boxes (centres, halves (B, k, 3)) other than `held` that
    lie within `reach` (B,) of the x-y segment start -> end (B, 2) the held object
    travels (-inf if none)."""
    seg = end - start
    t = np.einsum("bnj,bj->bn", center[:, :, :2] - start[:, None], seg)
    t = np.clip(t / np.maximum(np.einsum("bj,bj->b", seg, seg), 1e-9)[:, None], 0.0, 1.0)
    nearest = start[:, None] + t[:, :, None] * seg[:, None]
    dist = np.linalg.norm(center[:, :, :2] - nearest, axis=2) - half[:, :, :2].max(axis=2)
    near = dist < np.reshape(reach, (-1, 1))
    tops = np.where(near, center[:, :, 2] + half[:, :, 2], -np.inf)
    if held is not None:
        tops[:, held] = -np.inf
    return np.asarray(tops.max(axis=1, initial=-np.inf))


def robot_base_xy(ctx: PolicyContext) -> np.ndarray:
    """(2,) x-y of the robot's root body in the world."""
    import mujoco

    m = ctx.compiled.model
    data = mujoco.MjData(m)
    mujoco.mj_kinematics(m, data)
    for b in range(1, m.nbody):
        if m.body_parentid[b] == 0 and m.body(b).name.startswith("robot/"):
            return np.asarray(data.xpos[b, :2].copy())
    return np.zeros(2)


class LiberoExpert:
    """Vectorized phase machine for one LIBERO pick-and-place task (B envs)."""

    views: tuple[CameraView, ...] = ()  # reads simulator state; renders nothing

    def __init__(self, ctx: PolicyContext) -> None:
        conv = ctx.typed(PolicyOptions).actions
        if conv.space != "osc_pose" or ctx.action_space != "osc_pose":
            raise ValueError(
                "the libero_expert drives LIBERO's osc_pose controller: it needs "
                f"actions.space osc_pose on an osc_pose robot (got actions.space "
                f"{conv.space!r} on a {ctx.action_space!r} env)"
            )
        self.goal: PlaceGoal = place_goal(ctx)
        self.action_space = ctx.action_space
        grip = GRIPPERS[conv.gripper]
        one = np.ones(1)
        self.open_cmd = float(grip.from_open1(one, one)[0])
        self.close_cmd = float(grip.from_open1(np.zeros(1), one)[0])
        idx = ctx.compiled.index
        from metasim.tasks.predicates import body_extent

        ext = [body_extent(ctx.compiled, int(b)) for b in idx.object_body]
        self.centers = np.array([e[0] for e in ext]).reshape(-1, 3)  # (n_obj, 3)
        self.halves = np.array([e[1] for e in ext]).reshape(-1, 3)
        self.base_xy = robot_base_xy(ctx)
        grip_spec = ctx.compiled.robot.gripper
        full = grip_spec.max_width if grip_spec is not None else max(PINCH_WIDTHS)
        self.clearance = GripClearance(ctx, (full, *PINCH_WIDTHS))
        self.width_frac = np.array(self.clearance.widths) / full  # of the full opening
        self.hold_cmd = float(grip.from_open1(np.full(1, 0.5), one)[0])
        n = ctx.num_envs
        self.num_envs = n
        self.phase = np.zeros(n, dtype=np.int64)
        self.count: np.ndarray = np.zeros(n, dtype=np.int64)
        self.retries = np.zeros(n, dtype=np.int64)
        self.anchor = np.zeros((n, 3))
        self.hold = np.zeros((n, 3))  # object origin - grip site while held
        self.grip_h = np.zeros(n)  # grip-site height above the object's bottom when grasped
        self.carry_z = np.zeros(n)  # grip-site height while carrying
        self.closing = np.full(n, np.pi / 2)  # the fingers' closing direction, once grasped
        self.prev_ee: np.ndarray = np.zeros((n, 3))
        self.side = np.full((n, 2), np.nan)  # a wide object's pinched side, once chosen
        self.opening = np.zeros(n, dtype=np.int64)  # and the finger opening it takes
        self.escape = np.zeros((n, 2))  # x-y slide out from under an overhang before lifting

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None:
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids)
        self.phase[ids] = APPROACH
        self.count[ids] = 0
        self.retries[ids] = 0
        self.side[ids] = np.nan

    def close(self) -> None:
        """Nothing to release."""

    # ------------------------------------------------------------------ state reading

    def _boxes(self, s: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """World boxes of every object: centre, half (B, n_obj, 3), rotation (B, n_obj, 3, 3)."""
        pos = np.asarray(s["object_pos"], dtype=np.float64)
        quat = np.asarray(s["object_quat"], dtype=np.float64)
        rot = quat_to_mat(quat)
        center = pos + np.einsum("bnij,nj->bni", rot, self.centers)
        half = np.einsum("bnij,nj->bni", np.abs(rot), self.halves)
        return center, half, rot

    def _target(
        self, s: dict[str, Any], center: np.ndarray, half: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Where the object's origin goes in x-y (B, 2), the surface it is set on (B,) and
        the height it must clear on the way (B,)."""
        g = self.goal
        if g.mode == "resting_on":
            assert g.support is not None
            xy = np.asarray(s["object_pos"])[:, g.support, :2]
            top = center[:, g.support, 2] + half[:, g.support, 2]
            return xy, top, top
        assert g.site is not None and g.site_half is not None
        site = np.asarray(s["fixture_site_pos"])[:, g.site]
        top = site[:, 2] + g.site_half[2]
        if g.mode == "site_on":
            return site[:, :2], top, top
        return site[:, :2], site[:, 2] - g.site_half[2], top

    # ------------------------------------------------------------------ acting

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        """(B, 1, 7) osc_pose actions for the observation batch; only the envs `env_ids`
        (default: all) advance their phase machines (the others are settling or idle: a
        grasp side chosen from a scene still settling would be stale)."""
        if env_ids is None or len(env_ids) == self.num_envs:
            return self._act(obs)
        idle = np.ones(self.num_envs, dtype=bool)
        idle[np.asarray(env_ids)] = False
        kept = {k: getattr(self, k)[idle].copy() for k in STATE}
        action = self._act(obs)
        for k, v in kept.items():
            getattr(self, k)[idle] = v
        return action

    def _act(self, obs: dict[str, Any]) -> np.ndarray:
        p, s = obs["policy"], obs["privileged"]
        ee = np.asarray(p["ee_pos"], dtype=np.float64)
        rot_ee = quat_to_mat(np.asarray(p["ee_quat"], dtype=np.float64))
        center, half, rot = self._boxes(s)
        i = self.goal.obj
        obj_pos = np.asarray(s["object_pos"], dtype=np.float64)[:, i]
        bottom = center[:, i, 2] - half[:, i, 2]
        goal_xy, surface, clear = self._target(s, center, half)
        fixture_pos = np.asarray(s["fixture_body_pos"], dtype=np.float64)
        fixtures = self.clearance.fixtures.at(fixture_pos)
        others = (np.delete(center, i, axis=1), np.delete(half, i, axis=1))
        around = Surroundings(others, fixture_pos, self.clearance)
        grasp = plan_grasp(
            center[:, i],
            half[:, i],
            rot[:, i],
            self.goal.obj_half,
            around,
            self.base_xy,
            self.retries,
            self.side,
            self.opening,
        )
        self.side, self.opening = grasp.side, grasp.opening
        cur = np.arctan2(rot_ee[:, 1, 0], rot_ee[:, 0, 0])  # the fingers' closing direction
        want = cur - wrap(cur - grasp.closing, grasp.period)
        held = np.linalg.norm(obj_pos - ee - self.hold, axis=1) < HOLD_SLIP
        moved = np.linalg.norm(ee - self.prev_ee, axis=1)
        self.prev_ee = ee.copy()

        target = ee.copy()
        speed = np.ones(len(ee))
        grip = np.full(len(ee), self.open_cmd)
        closing = self.closing.copy()
        nxt = self.phase.copy()
        ph, c = self.phase, self.count
        above = grasp.point + np.array([0.0, 0.0, HOVER])
        # Where the hand puts the object down: as it held it when grasped (upright on its
        # support), with the object's origin over the goal and its bottom on the surface;
        # lowering there turns an object that tilted in the hand back upright.
        place = np.concatenate([goal_xy - self.hold[:, :2], (surface + self.grip_h)[:, None]], 1)

        # Approach and descend with the fingers as far apart as the grasp chose (a bowl
        # between a drawer's walls: narrower than fully open).
        m = (ph == APPROACH) | (ph == DESCEND)
        grip[m] = self._opening_cmd(np.asarray(p["gripper"])[:, 0], grasp.opening)[m]
        m = ph == APPROACH
        target[m], closing[m] = above[m], want[m]
        rot_err = np.linalg.norm(
            mat_to_axis_angle(down_frame(want) @ rot_ee.transpose(0, 2, 1)), axis=1
        )
        near = np.linalg.norm(above - ee, axis=1) < 0.015
        nxt[m & ((near & (rot_err < 0.1)) | (c >= 80))] = DESCEND

        m = ph == DESCEND
        target[m], closing[m], speed[m] = grasp.point[m], want[m], 0.5
        stalled = (c >= 6) & (moved < 5e-4)
        done = (np.linalg.norm(grasp.point - ee, axis=1) < 0.004) | stalled | (c >= 50)
        self._enter(m & done, CLOSE, nxt, ee)

        m = ph == CLOSE
        target[m], grip[m] = self.anchor[m], self.close_cmd
        done = m & (c >= 8)
        if done.any():
            self.hold[done] = obj_pos[done] - ee[done]
            self.grip_h[done] = (ee[:, 2] - bottom)[done]
            radius = half[:, i, :2].max(axis=1)
            # Over the objects near the path, and the fixture geoms the object would
            # touch on its way (a drawer's front wall).
            path_top = np.maximum(
                _path_tops(center, half, i, center[:, i, :2], goal_xy),
                _path_tops(*world_aabb(fixtures), None, center[:, i, :2], goal_xy, radius + 0.02),
            )
            self.escape[done] = overhang_escape(center[:, i], radius, fixtures)[done]
            lift_to = np.maximum.reduce([clear + 0.05, path_top + 0.03, bottom + 0.06])
            self.carry_z[done] = (ee[:, 2] + lift_to - bottom)[done]
        self._enter(done, LIFT, nxt, ee)

        m = ph == LIFT
        # Out from under an overhang first (held just off the floor), then straight up.
        out = self.anchor[:, :2] + self.escape
        sliding = m & (c < 30) & (np.linalg.norm(out - ee[:, :2], axis=1) > 0.008)
        sliding &= np.linalg.norm(self.escape, axis=1) > 0
        slid = m & ~sliding
        self.anchor[slid, :2] += self.escape[slid]  # lift from where the slide ended
        self.escape[slid] = 0.0
        target[m] = self.anchor[m]
        target[m, 2] = self.carry_z[m]
        target[sliding, :2] = out[sliding]
        target[sliding, 2] = self.anchor[sliding, 2] + 0.006
        grip[m] = self.close_cmd
        nxt[m & (np.abs(ee[:, 2] - self.carry_z) < 0.015)] = CARRY
        self._retry(m & (c >= 6) & ~held, nxt)

        m = ph == CARRY
        target[m] = place[m]
        target[m, 2] = self.carry_z[m]
        grip[m] = self.close_cmd
        xy_err = np.linalg.norm(place[:, :2] - ee[:, :2], axis=1)
        self._enter(m & (((xy_err < 0.006) & (moved < 3e-3)) | (c >= 120)), LOWER, nxt, ee)
        self._retry(m & ~held, nxt)

        m = ph == LOWER
        target[m] = place[m] + np.array([0.0, 0.0, 0.004])
        speed[m] = np.where(ee[:, 2] - target[:, 2] > 0.04, 1.0, 0.4)[m]
        grip[m] = self.close_cmd
        done = (np.abs(target[:, 2] - ee[:, 2]) < 0.004) | ((c >= 6) & (moved < 5e-4)) | (c >= 60)
        self._enter(m & done, RELEASE, nxt, ee)
        self._retry(m & ~held, nxt)

        m = ph == RELEASE
        target[m] = self.anchor[m]
        self._enter(m & (c >= 8), RETREAT, nxt, ee)

        m = ph == RETREAT
        target[m] = self.anchor[m] + np.array([0.0, 0.0, 0.12])
        # Still running once the hand is away: the goal does not hold; start over.
        self._retry(m & (c >= 30), nxt)

        self.closing = closing
        self.count = np.where(nxt == ph, c + 1, 0)
        self.phase = nxt
        action = np.zeros((len(ee), 7))
        action[:, :3] = _capped(POS_GAIN * (target - ee) / POS_SCALE, speed)
        rot_goal = down_frame(closing)
        err = mat_to_axis_angle(rot_goal @ rot_ee.transpose(0, 2, 1))
        action[:, 3:6] = _capped(ROT_GAIN * err / ROT_SCALE, 1.0)
        action[:, 6] = grip
        return action[:, None, :]

    def _opening_cmd(self, now: np.ndarray, which: np.ndarray) -> np.ndarray:
        """(B,) gripper commands that bring the finger opening `now` (B,), a fraction of
        the full one, to the opening `which` (B,) indexes: open, close, or hold (the
        command moves a quarter of its range per control step, about 1 cm)."""
        want = self.width_frac[which]
        cmd = np.where(now > want + 0.08, self.close_cmd, self.hold_cmd)
        return np.where((now < want - 0.08) | (want >= 0.999), self.open_cmd, cmd)

    def _enter(self, mask: np.ndarray, phase: int, nxt: np.ndarray, ee: np.ndarray) -> None:
        """Envs in `mask` move to `phase`, anchored at the current grip-site position."""
        nxt[mask] = phase
        self.anchor[mask] = ee[mask]

    def _retry(self, mask: np.ndarray, nxt: np.ndarray) -> None:
        """Envs in `mask` start over from the approach, while they have retries left."""
        mask = mask & (self.retries < RETRIES)
        nxt[mask] = APPROACH
        self.retries[mask] += 1
        self.side[mask] = np.nan


@register_policy("libero_expert")
def _libero_expert(ctx: PolicyContext) -> LiberoExpert:
    return LiberoExpert(ctx)
