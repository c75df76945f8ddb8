"""Settle steps: each episode's first control steps hold the arm still with the gripper
open while the objects settle; the policy is not asked (LIBERO's clients wait 10 steps).

The env runs them once switched on (`MetasimVectorEnv.use_settle_steps`, what the
evaluation loop does): a reset starts each env's count, `step` replaces the actions of
the envs still settling and counts down.
"""

from __future__ import annotations

import numpy as np

from metasim.control.actions import ActionController


class SettleSteps:
    """The settle steps of `num_envs` envs: `steps` per episode (the task's
    `settle_steps`), none until `use` switches them on."""

    def __init__(self, steps: int, num_envs: int) -> None:
        self.steps = steps
        self.left = np.zeros(num_envs, dtype=np.int64)  # (B,) settle steps still to run
        self.action: np.ndarray | None = None  # (B, dim) the action of a settle step
        self.on = False

    def use(self, controller: ActionController) -> None:
        """Run the settle steps from the next reset on (a delta action space's hold with
        the gripper open; a ValueError for a space without one)."""
        if self.steps and self.action is None:
            self.action = controller.settle_action(len(self.left))
        self.on = True

    @property
    def settling(self) -> np.ndarray:
        """(B,) bool: the envs whose episode is still in its settle steps."""
        return self.left > 0

    def start(self, env_ids: np.ndarray) -> None:
        """Envs `env_ids` start an episode: their settle steps come first."""
        if self.on:
            self.left[env_ids] = self.steps

    def actions(self, actions: np.ndarray) -> np.ndarray:
        """`actions` (B, dim) with the settle action in the rows of the settling envs."""
        if self.action is None or not self.left.any():
            return actions
        return np.where(self.settling[:, None], self.action, actions)

    def count(self) -> None:
        """One control step has run: one settle step fewer where any are left."""
        self.left[self.left > 0] -= 1
