"""`policy=noop`: hold still with the gripper open, in the declared action convention.

The baseline every suite should fail: a task whose goal holds while the robot does
nothing is mis-specified (the LIBERO import is checked with it). Only delta conventions
can express "hold still" without reading the state (`ee_delta`, `osc_pose`, `joint_vel`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metasim.envs.vec_env import CameraView
from metasim.policies.base import PolicyContext, PolicyOptions, register_policy
from metasim.policies.conventions import GRIPPERS


@register_policy("noop")
class NoopPolicy:
    """(B, 1, D) zeros for the arm and the gripper's open command, every step."""

    views: tuple[CameraView, ...] = ()

    def __init__(self, ctx: PolicyContext) -> None:
        conv = ctx.typed(PolicyOptions).actions
        if conv.space not in ("ee_delta", "osc_pose", "joint_vel"):
            raise ValueError(
                f"the noop policy holds still only in a delta convention (ee_delta, osc_pose "
                f"or joint_vel), not actions.space {conv.space!r}"
            )
        self.action_space = ctx.action_space
        n_arm = len(ctx.compiled.index.arm_qpos)
        self.action = np.zeros(conv.dim(n_arm))
        self.action[-1] = float(GRIPPERS[conv.gripper].from_open1(np.ones(1), np.ones(1))[0])
        self.num_envs = ctx.num_envs

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None:
        """Nothing to forget."""

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        return np.tile(self.action, (self.num_envs, 1, 1))

    def close(self) -> None:
        """Nothing to release."""
