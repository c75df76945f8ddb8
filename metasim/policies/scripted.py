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
        action = np.zeros((n, 7))
        yaw = np.zeros(n)
        gyaw = grip_yaw(v)
        last = len(self.phases) - 1
        current = self.phase.copy()
        # the phases some env is in (a phase entered this step acts from the next)
        for k in np.flatnonzero(np.bincount(current)):
            ph = self.phases[k]
            sel = current == k
            # every env in one phase (always so with one env): slices, not masks
            ix: slice | np.ndarray = slice(None) if sel.all() else sel
            target = ph.target(v, self.anchor)[ix]
            err = target - ee[ix]
            dist = np.sqrt(np.add.reduce(err * err, axis=1))[:, None]
            action[ix, :3] = err * np.minimum(1.0, ph.speed / np.maximum(dist, 1e-9))
            action[ix, 6] = ph.gripper
            want = 0.0 if ph.align.yaw is None else ph.align.yaw(v)
            # of the yaws equivalent under the symmetry, the one nearest the gripper's
            yaw[ix] = (gyaw + wrap_angle(want - gyaw, ph.align.period))[ix]
            self.count[ix] += 1
            count = self.count[ix]
            done = count >= ph.wait
            if ph.tol is not None:
                done &= dist[:, 0] < ph.tol
            else:
                done &= ph.until is None
            if ph.until is not None:
                done |= ph.until(v)[ix] & (count >= ph.wait)
            done |= count >= ph.max_steps
            if k < last and done.any():
                ids = np.flatnonzero(sel)[done]
                self.phase[ids] += 1
                self.count[ids] = 0
                self.fresh[ids] = True
        action[:, 3:6] = self._rotation(v, yaw)
        return action[:, None, :]

    def _rotation(self, v: ObsView, yaw: np.ndarray) -> np.ndarray:
        """Rotation vector (world frame, at most 0.15 rad) towards pointing down at `yaw`.

        In quaternions: goal = Rz(yaw) DOWN = (0, cos(yaw/2), sin(yaw/2), 0), and the
        world-frame error goal * conj(cur), a few (B,) products instead of matrices."""
        q = np.asarray(v.p["ee_quat"], dtype=np.float64)
        q = q / np.sqrt(np.add.reduce(q * q, axis=1))[:, None]
        w, x, y, z = q.T
        c, s = np.cos(yaw / 2), np.sin(yaw / 2)
        # (0, c, s, 0) * (w, -x, -y, -z)
        err = np.stack([c * x + s * y, c * w - s * z, s * w + c * z, s * x - c * y], axis=1)
        err *= np.where(err[:, :1] < 0, -1.0, 1.0)  # the short way round
        sin_half = np.sqrt(np.add.reduce(err[:, 1:] ** 2, axis=1))[:, None]
        angle = 2.0 * np.arctan2(sin_half, err[:, :1])
        vec = err[:, 1:] / np.maximum(sin_half, 1e-12) * angle
        norm = np.sqrt(np.add.reduce(vec * vec, axis=1))[:, None]
        turn = 0.15 * self.rate  # rad per control step at most
        return np.asarray(vec * np.minimum(1.0, turn / np.maximum(norm, 1e-9)))


@register_policy("scripted")
def _scripted(ctx: PolicyContext) -> ScriptedExpert:
    return ScriptedExpert(ctx)
