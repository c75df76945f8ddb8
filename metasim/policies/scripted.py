"""The built-in scripted expert: state-based waypoint programs tracked through IK.

Each task's YAML names a skill (`task.expert`); a skill is a list of phases, each with a
target for the grasp site, a gripper command, a yaw to align the gripper to (`Align`) and
a condition to move on. Every env runs its own phase counter, so envs that reset at
different times stay independent. Actions are end-effector deltas (`ee_delta`), gripper
in the canonical convention (1 = open).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metasim.envs.vec_env import CameraView
from metasim.policies.base import PolicyContext, register_policy
from metasim.policies.skills import DOWN, ObsView, grip_yaw, skill_phases, wrap_angle
from metasim.rotations import axis_angle_to_mat, mat_to_axis_angle, quat_to_mat


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
        self.phases = skill_phases(ctx, exp)
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

    def close(self) -> None:
        """Nothing to release."""

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        v = ObsView(obs, self.ctx)
        ee = v.ee
        n = ee.shape[0]
        self.anchor[self.fresh] = ee[self.fresh]
        self.fresh[:] = False
        action = np.zeros((n, 7))
        yaw = np.zeros(n)
        gyaw = grip_yaw(v)
        last = len(self.phases) - 1
        current = self.phase.copy()
        for k, ph in enumerate(self.phases):
            sel = current == k  # a phase entered this step acts from the next
            if not sel.any():
                continue
            target = ph.target(v, self.anchor)[sel]
            err = target - ee[sel]
            dist = np.linalg.norm(err, axis=1, keepdims=True)
            action[sel, :3] = err * np.minimum(1.0, ph.speed / np.maximum(dist, 1e-9))
            action[sel, 6] = ph.gripper
            want = np.zeros(n) if ph.align.yaw is None else ph.align.yaw(v)
            # of the yaws equivalent under the symmetry, the one nearest the gripper's
            yaw[sel] = (gyaw + wrap_angle(want - gyaw, ph.align.period))[sel]
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
        action[:, 3:6] = self._rotation(v, yaw)
        return action[:, None, :]

    def _rotation(self, v: ObsView, yaw: np.ndarray) -> np.ndarray:
        """Rotation vector (world frame, at most 0.15 rad) towards pointing down at `yaw`."""
        cur = quat_to_mat(np.asarray(v.p["ee_quat"]))
        rz = axis_angle_to_mat(np.stack([np.zeros_like(yaw), np.zeros_like(yaw), yaw], axis=1))
        goal = rz @ DOWN
        err = mat_to_axis_angle(goal @ np.swapaxes(cur, 1, 2))
        norm = np.linalg.norm(err, axis=1, keepdims=True)
        return np.asarray(err * np.minimum(1.0, 0.15 / np.maximum(norm, 1e-9)))


@register_policy("scripted")
def _scripted(ctx: PolicyContext) -> ScriptedExpert:
    return ScriptedExpert(ctx)
