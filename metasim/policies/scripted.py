"""The built-in scripted expert: state-based waypoint programs tracked through IK.

Each task's YAML names a skill (`task.expert`); a skill is a list of phases, each with a
target for the grasp site, a gripper command, a yaw to align the gripper to (`Align`) and
a condition to move on. Every env runs its own phase counter, so envs that reset at
different times stay independent. Actions are end-effector deltas (`ee_delta`), gripper
in the canonical convention (1 = open).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from metasim.envs.vec_env import CameraView
from metasim.policies.base import PolicyContext, register_policy
from metasim.policies.skills import DESIGN_DT, ObsView, Phase, grip_yaw, skill_phases, wrap_angle
from metasim.rotations import RowWeights, rows_times


class ScriptedExpert:
    """Vectorized phase machine: one phase counter, anchor and step count per env."""

    action_space = "ee_delta"
    views: tuple[CameraView, ...] = ()  # reads simulator state; renders nothing

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
        # Speeds, waits and the turn rate are written per control step at 20 Hz; at
        # another control rate they keep their meaning in metres and seconds.
        self.rate = 1.0 if abs(ctx.control_dt - DESIGN_DT) < 1e-9 else ctx.control_dt / DESIGN_DT
        self.phases = [self._at_rate(ph) for ph in skill_phases(ctx, exp)]
        n = ctx.num_envs
        self.phase = np.zeros(n, dtype=np.int64)
        self.count = np.zeros(n, dtype=np.int64)
        self.anchor = np.zeros((n, 3))
        self.fresh = np.ones(n, dtype=bool)  # anchor not yet captured for the current phase
        # Each phase's numbers as a row of one table, so that envs in different phases are
        # handled in one pass (columns: speed, gripper, distance below which the phase
        # ends, wait, max_steps, yaw period; see _params).
        self.table = np.array([_params(ph) for ph in self.phases])
        self.gated = any(ph.until is not None for ph in self.phases)

    def _at_rate(self, ph: Phase) -> Phase:
        if self.rate == 1.0:
            return ph
        return replace(
            ph,
            speed=ph.speed * self.rate,
            wait=round(ph.wait / self.rate),
            max_steps=round(ph.max_steps / self.rate),
        )

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None:
        ids = np.arange(self.ctx.num_envs) if env_ids is None else np.asarray(env_ids)
        self.phase[ids] = 0
        self.count[ids] = 0
        self.fresh[ids] = True

    def close(self) -> None:
        """Nothing to release."""

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        v = ObsView(obs, self.ctx)
        ee = v.ee
        n = ee.shape[0]
        if self.fresh.any():
            self.anchor[self.fresh] = ee[self.fresh]
            self.fresh[:] = False
        gyaw = grip_yaw(v)
        current = self.phase.copy()
        first = int(current[0])
        single = n == 1 or not (current != first).any()
        # Per phase: the target, the yaw to align to and `until`; the rest in one pass
        # over all envs, with each env's phase numbers (a phase entered this step acts
        # from the next).
        until = np.zeros(n, dtype=bool)
        if single:  # every env in one phase (always so with one env): no masks
            ph = self.phases[first]
            target = ph.target(v, self.anchor)
            want = 0.0 if ph.align.yaw is None else ph.align.yaw(v)
            if ph.until is not None:
                until = ph.until(v)
            speed, grip, tol, wait, most, period = self.table[first]
        else:
            target, want = np.empty((n, 3)), np.zeros(n)
            for k in np.flatnonzero(np.bincount(current)):
                ph, sel = self.phases[k], current == k
                target[sel] = ph.target(v, self.anchor)[sel]
                if ph.align.yaw is not None:
                    want[sel] = ph.align.yaw(v)[sel]
                if ph.until is not None:
                    until[sel] = ph.until(v)[sel]
            speed, grip, tol, wait, most, period = self.table[current].T
        err = target - ee
        dist = np.sqrt(np.add.reduce(err * err, axis=1))
        err *= np.minimum(1.0, speed / np.maximum(dist, 1e-9))[:, None]
        action = np.empty((n, 7))
        action[:, :3] = err
        action[:, 6] = grip
        # of the yaws equivalent under the symmetry, the one nearest the gripper's
        yaw = gyaw + wrap_angle(want - gyaw, period)
        action[:, 3:6] = self._rotation(v, yaw)
        self.count += 1
        count = self.count
        waited = count >= wait
        done = waited & (dist < tol)
        if self.gated:
            done |= until & waited
        done |= count >= most
        done &= current < len(self.phases) - 1
        if done.any():
            ids = np.flatnonzero(done)
            self.phase[ids] += 1
            self.count[ids] = 0
            self.fresh[ids] = True
        return action[:, None, :]

    def _rotation(self, v: ObsView, yaw: np.ndarray) -> np.ndarray:
        """Rotation vector (world frame, at most 0.15 rad) towards pointing down at `yaw`.

        In quaternions: goal = Rz(yaw) DOWN = (0, c, s, 0) with c, s = cos, sin(yaw / 2),
        and the world-frame error goal * conj(cur) = c (x, w, z, -y) + s (y, -z, w, x), each
        term one product of the current quaternion with a fixed matrix. The rotation
        vector's length is the error's angle, so the turn limit scales it directly (the
        angle, and so the vector, does not depend on the quaternion's norm)."""
        q = np.asarray(v.p["ee_quat"], dtype=np.float64)
        half = 0.5 * yaw
        parts = rows_times(q, _GOAL_ERR_ROWS).reshape(-1, 2, 4)
        err = parts[:, 0] * np.cos(half)[:, None] + parts[:, 1] * np.sin(half)[:, None]
        w, vec = err[:, 0], err[:, 1:]
        sin_half = np.sqrt(np.add.reduce(vec * vec, axis=1))
        angle = 2.0 * np.arctan2(sin_half, np.abs(w))  # the short way round
        turn = 0.15 * self.rate  # rad per control step at most
        scale = np.minimum(angle, turn) / np.maximum(sin_half, 1e-12)
        return np.asarray(vec * np.where(w < 0, -scale, scale)[:, None])


def _params(ph: Phase) -> tuple[float, ...]:
    """A phase's row of ScriptedExpert.table. Its distance threshold: `tol`; without one,
    infinite (the phase ends when its wait is over), or, when `until` ends it, -1 (never
    from distance)."""
    if ph.tol is not None:
        tol = ph.tol
    else:
        tol = np.inf if ph.until is None else -1.0
    return (ph.speed, ph.gripper, tol, ph.wait, ph.max_steps, ph.align.period)


# (4, 8): the current quaternion (w, x, y, z) -> (x, w, z, -y | y, -z, w, x), the error's
# cos and sin parts (see ScriptedExpert._rotation)
_GOAL_ERR = np.zeros((4, 8))
for _col, (_row, _sign) in enumerate(
    [(1, 1), (0, 1), (3, 1), (2, -1), (2, 1), (3, -1), (0, 1), (1, 1)]
):
    _GOAL_ERR[_row, _col] = _sign
_GOAL_ERR_ROWS = RowWeights(_GOAL_ERR)


@register_policy("scripted")
def _scripted(ctx: PolicyContext) -> ScriptedExpert:
    return ScriptedExpert(ctx)
