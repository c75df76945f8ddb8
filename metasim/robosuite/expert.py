"""`policy=robosuite_expert`: a state-based scripted expert for robosuite's tasks (`task.expert`
of the scene: `pick_lift` of Lift, `pick_place` of Stack and PickPlaceCan, `open_door` of
Door), driving robosuite's OSC_POSE (xyz x 0.05 m, axis-angle x 0.5 rad relative to the
current end-effector pose, world frame; gripper -1 open, +1 close).

Per env, a phase machine over the grip site and the bodies and joints of robosuite's world
that the privileged terms below read. The hand points down (LIBERO's expert's frame,
`down_frame`), its fingers closing across the object's narrow side (a cube's faces modulo
90 degrees; a can in any direction) or across the door's handle bar. Pick: hover over the
object, descend to the grasp height `GraspGeometry` chooses for its size, close, lift; for
`pick_place` carry it (its bottom clear of the target's top) over the target, lower it
there as it was held, open, retreat. Door (`expert_door.py`): grasp the handle, turn it
down about the latch's axis, pull the door open about the hinge's axis. A grasp that slips,
or a placement that does not hold once the hand is away, starts over (up to `RETRIES`
times). Proportional control, capped in OSC_POSE's input units.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metasim.policies.base import PolicyContext, register_policy
from metasim.policies.grasp import GraspGeometry
from metasim.policies.skills import wrap_angle
from metasim.robosuite.expert_door import DoorExpert
from metasim.robosuite.expert_machine import (
    APPROACH,
    BODIES,
    CARRY,
    CLOSE,
    DESCEND,
    HOLD_SLIP,
    LIFT,
    LOWER,
    QUATS,
    RELEASE,
    RETREAT,
    SKILLS,
    PhaseMachine,
    parts,
)
from metasim.rotations import quat_to_mat
from metasim.scene.schema import ExpertSpec
from metasim.tasks.predicates import body_extent

CLEAR = 0.03  # the held object's bottom over the target's top while carrying


class PickExpert(PhaseMachine):
    """`pick_lift` and `pick_place` (module doc)."""

    def __init__(self, ctx: PolicyContext, exp: ExpertSpec) -> None:
        super().__init__(ctx, exp)
        m = ctx.compiled.model
        obj, tgt = (m.body(b).id for b in parts(exp)[0])
        (self.center, self.half), (_, tgt_half) = (body_extent(ctx.compiled, b) for b in (obj, tgt))
        xy = self.half[:2]
        square = abs(xy[0] - xy[1]) < 1e-3
        # A box closes across its narrow side (modulo 90 degrees when square); a round
        # object (its footprint a circle's box) any way, so the hand keeps its yaw.
        self.round = bool(m.geom_type[np.flatnonzero(m.geom_bodyid == obj)].max() != 6)
        self.axis = int(np.argmin(xy))
        self.period = np.pi / 2 if square else np.pi
        self.geom = GraspGeometry(self.axis, self.period, float(self.half[2]), 2 * float(xy.min()))
        self.place = exp.skill == "pick_place"
        self.offset = np.asarray(exp.target_offset)
        self.target_top = float(tgt_half[2])
        self.carry_z = np.zeros(self.num_envs)

    def _plan(
        self, ee: np.ndarray, cur: np.ndarray, moved: np.ndarray, s: dict[str, Any],
        nxt: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
        pos = np.asarray(s[BODIES], dtype=np.float64)
        rot = quat_to_mat(np.asarray(s[QUATS], dtype=np.float64)[:, 0])
        obj = pos[:, 0] + rot @ self.center
        goal = pos[:, 1] + self.offset
        ph, c = self.phase, self.count
        target, speed = ee.copy(), np.ones(len(ee))
        grip = np.full(len(ee), self.close_cmd)
        up = np.array([0.0, 0.0, 1.0])
        grasp = obj + self.geom.grasp_dz * up
        held = np.linalg.norm(obj - ee - self.hold, axis=1) < HOLD_SLIP

        if not self.round:  # a round object keeps the hand's start direction
            m = ph == APPROACH
            heading = np.arctan2(rot[:, 1, self.axis], rot[:, 0, self.axis])
            self.closing[m] = (cur - wrap_angle(cur - heading, self.period))[m]
        m = ph == APPROACH
        above = grasp + self.geom.hover * up
        target[m], grip[m] = above[m], self.open_cmd
        turned = np.abs(wrap_angle(cur - self.closing, np.pi)) < 0.05
        near = np.linalg.norm(above - ee, axis=1) < 0.01
        self._enter(m & ((near & turned) | (c >= 100)), DESCEND, nxt, ee)

        m = ph == DESCEND
        target[m], grip[m], speed[m] = grasp[m], self.open_cmd, 0.5
        done = (np.linalg.norm(grasp - ee, axis=1) < 0.004) | ((c >= 8) & (moved < 5e-4))
        self._enter(m & (done | (c >= 60)), CLOSE, nxt, ee)

        m = ph == CLOSE
        target[m] = self.anchor[m]
        done = m & (c >= 10)
        self.hold[done] = (obj - ee)[done]
        bottom = obj[:, 2] - self.half[2]
        top = goal[:, 2] - self.offset[2] + self.target_top
        lift = np.maximum(self.exp.lift, top + CLEAR - bottom) if self.place else self.exp.lift
        self.carry_z[done] = (ee[:, 2] + lift)[done]
        self._enter(done, LIFT, nxt, ee)

        m = ph == LIFT
        target[m] = self.anchor[m]
        target[m, 2] = self.carry_z[m]
        if self.place:
            self._enter(m & (np.abs(ee[:, 2] - self.carry_z) < 0.015), CARRY, nxt, ee)
        self._retry(m & (c >= 8) & ~held, nxt)

        place = goal - self.hold
        m = ph == CARRY
        target[m] = place[m]
        target[m, 2] = self.carry_z[m]
        xy_err = np.linalg.norm(place[:, :2] - ee[:, :2], axis=1)
        self._enter(m & (((xy_err < 0.005) & (moved < 2e-3)) | (c >= 150)), LOWER, nxt, ee)
        self._retry(m & ~held, nxt)

        m = ph == LOWER
        target[m] = place[m]
        speed[m] = 0.5
        done = (np.abs(place[:, 2] - ee[:, 2]) < 0.004) | ((c >= 6) & (moved < 5e-4))
        self._enter(m & (done | (c >= 60)), RELEASE, nxt, ee)
        self._retry(m & ~held, nxt)

        m = ph == RELEASE
        target[m], grip[m] = self.anchor[m], self.open_cmd
        self._enter(m & (c >= 10), RETREAT, nxt, ee)

        m = ph == RETREAT
        target[m], grip[m] = self.anchor[m] + 0.1 * up, self.open_cmd
        self._retry(m & (c >= 40), nxt)  # still running: the placement did not hold
        return target, speed, grip


def _expert(ctx: PolicyContext) -> PhaseMachine:
    exp = ctx.compiled.scene.task.expert
    if exp is None or exp.skill not in SKILLS:
        raise ValueError(
            f"the robosuite_expert takes the skills {', '.join(SKILLS)}; scene "
            f"{ctx.compiled.scene.name!r} has expert {exp.skill if exp else None!r}"
        )
    if exp.skill == "open_door":
        return DoorExpert(ctx, exp)
    return PickExpert(ctx, exp)


register_policy("robosuite_expert")(_expert)
