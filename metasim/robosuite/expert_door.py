"""The robosuite expert's `open_door` skill (robosuite's Door: a door on a vertical hinge,
latched until its handle is turned down about the latch's axis, past ~1.3 rad of its
+-pi/2).

The hand cannot take the handle bar from above: closing across the bar (along the door's
normal) puts the hand's long side into the door. So it comes level, pointing into the
door, its fingers closing vertically across the bar's height; once it holds the bar it
keeps the pose it has relative to the latch's body (captured at the grasp), and what
moves is the handle: turn, the handle's frame rotated ahead about the latch's axis; pull,
rotated ahead about the hinge's axis (and a little further about the latch's, so the
latch stays clear). Axes and handle come from the door's bodies each step (robosuite
turns and shifts the door at every reset)."""

from __future__ import annotations

from typing import Any

import numpy as np

from metasim.policies.base import PolicyContext
from metasim.robosuite.expert_machine import (
    APPROACH,
    BODIES,
    JOINTS,
    QUATS,
    PhaseMachine,
    parts,
)
from metasim.rotations import axis_angle_to_mat, quat_to_mat
from metasim.scene.schema import ExpertSpec

INSERT, GRASP, TURN, PULL = range(1, 5)
TURNED = 1.4  # rad of the latch: clear of the frame (at 1.2 it stops the door at 0.1 rad)
TURN_TO = 1.45  # rad: the latch is turned this far and no further, off its limit (pi/2),
# where the limit's contact is where metasim's MuJoCo and robosuite's 3.17 part
STEP = 0.3  # rad: how far ahead of the handle the target turns, per control step
STAND = 0.1  # m: the pre-grasp point in front of the handle
LOST = 0.04  # the handle has left the hand once the grip site is this far from it


def _turn(axis: np.ndarray, angle: float) -> np.ndarray:
    """(B, 3, 3) rotations by `angle` about the unit `axis` (B, 3)."""
    return np.asarray(axis_angle_to_mat(axis * angle))


def _level(out: np.ndarray) -> np.ndarray:
    """(B, 3, 3) grip-site frames pointing along -`out` (B, 3) (into the door), the fingers
    closing vertically (x down)."""
    z = -out
    x = np.broadcast_to(np.array([0.0, 0.0, -1.0]), z.shape)
    return np.stack([x, np.cross(z, x), z], axis=-1)


class DoorExpert(PhaseMachine):
    """`open_door` (module doc)."""

    state = (*PhaseMachine.state, "grip_rot", "grip_at")

    def __init__(self, ctx: PolicyContext, exp: ExpertSpec) -> None:
        super().__init__(ctx, exp)
        m = ctx.compiled.model
        (_, _), (hinge, latch) = parts(exp)
        self.hinge = m.jnt_pos[m.joint(hinge).id].copy(), m.jnt_axis[m.joint(hinge).id].copy()
        self.latch = m.jnt_pos[m.joint(latch).id].copy(), m.jnt_axis[m.joint(latch).id].copy()
        assert exp.fixture is not None
        self.handle = m.site_pos[m.site(exp.fixture.removesuffix("_main") + "_handle").id].copy()
        n = ctx.num_envs
        self.grip_rot = np.tile(np.eye(3), (n, 1, 1))  # the hand in the latch's frame
        self.grip_at = np.zeros((n, 3))  # the grip site in the latch's frame
        self.goal = np.tile(np.eye(3), (n, 1, 1))

    def _goal_rot(self) -> np.ndarray:
        return self.goal

    def _plan(
        self, ee: np.ndarray, cur: np.ndarray, moved: np.ndarray, s: dict[str, Any],
        nxt: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
        pos = np.asarray(s[BODIES], dtype=np.float64)  # (B, 2, 3): panel, latch
        rot = quat_to_mat(np.asarray(s[QUATS], dtype=np.float64))  # (B, 2, 3, 3)
        q = np.asarray(s[JOINTS], dtype=np.float64)  # (B, 2): hinge, latch
        hinge_at, hinge_axis = pos[:, 0] + rot[:, 0] @ self.hinge[0], rot[:, 0] @ self.hinge[1]
        latch_at, latch_axis = pos[:, 1] + rot[:, 1] @ self.latch[0], rot[:, 1] @ self.latch[1]
        handle = pos[:, 1] + rot[:, 1] @ self.handle
        out = -rot[:, 0, :, 1]  # the panel's -y: out of the door, towards the robot
        out *= np.sign(np.einsum("bi,bi->b", handle - pos[:, 0], out))[:, None]
        ph, c = self.phase, self.count
        target, speed = ee.copy(), np.full(len(ee), 0.5)
        grip = np.full(len(ee), self.close_cmd)
        level = _level(out)

        m = ph == APPROACH
        stand = handle + STAND * out
        target[m], grip[m], speed[m], self.goal[m] = stand[m], self.open_cmd, 1.0, level[m]
        err = np.linalg.norm(self.rot_ee - level, axis=(1, 2))
        near = np.linalg.norm(stand - ee, axis=1) < 0.01
        self._enter(m & ((near & (err < 0.1)) | (c >= 100)), INSERT, nxt, ee)

        m = ph == INSERT
        target[m], grip[m], self.goal[m] = handle[m], self.open_cmd, level[m]
        done = (np.linalg.norm(handle - ee, axis=1) < 0.004) | ((c >= 8) & (moved < 5e-4))
        self._enter(m & (done | (c >= 60)), GRASP, nxt, ee)

        m = ph == GRASP
        target[m], self.goal[m] = self.anchor[m], level[m]
        done = m & (c >= 10)
        back = rot[:, 1].transpose(0, 2, 1)
        self.grip_rot[done] = (back @ self.rot_ee)[done]
        self.grip_at[done] = np.einsum("bij,bj->bi", back, ee - pos[:, 1])[done]
        self._enter(done, TURN, nxt, ee)

        held_rot = rot[:, 1] @ self.grip_rot
        held_at = pos[:, 1] + np.einsum("bij,bj->bi", rot[:, 1], self.grip_at)
        lost = np.linalg.norm(held_at - ee, axis=1) > LOST
        lead = np.clip(TURN_TO - q[:, 1], 0.0, STEP)[:, None]
        ahead = _turn(latch_axis * lead, 1.0)
        m = ph == TURN
        target[m] = (latch_at + np.einsum("bij,bj->bi", ahead, held_at - latch_at))[m]
        self.goal[m] = (ahead @ held_rot)[m]
        self._enter(m & ((q[:, 1] > TURNED) | (c >= 80)), PULL, nxt, ee)
        self._retry(m & lost, nxt)

        m = ph == PULL
        down = _turn(latch_axis * np.minimum(lead, 0.1), 1.0)
        swing = _turn(hinge_axis, STEP)
        pulled = latch_at + np.einsum("bij,bj->bi", down, held_at - latch_at)
        pulled = hinge_at + np.einsum("bij,bj->bi", swing, pulled - hinge_at)
        target[m], self.goal[m] = pulled[m], (swing @ down @ held_rot)[m]
        self._retry(m & lost, nxt)
        return target, speed, grip
