"""A test policy: the scripted expert with deterministic action jitter (the expert "with
action noise"). The jitter is a fixed function of the observed end-effector position, so
a replay of an episode reproduces it whatever the env slot or `num_envs`."""

from __future__ import annotations

from typing import Any

import numpy as np

from metasim.policies.base import PolicyContext, PolicyOptions, register_policy
from metasim.policies.scripted import ScriptedExpert
from metasim.policies.skills import ObsView

KIND = "jittered_scripted"


class JitterOptions(PolicyOptions):
    """The jitter's amplitude (metres per control step on the translation)."""

    jitter: float = 0.02


class JitteredExpert(ScriptedExpert):
    def __init__(self, ctx: PolicyContext) -> None:
        super().__init__(ctx)
        self.jitter = ctx.typed(JitterOptions).jitter

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        ee = ObsView(obs, self.ctx).ee  # (B, 3), read before the expert advances
        action = super().act(obs, env_ids)  # (B, 1, 7)
        phase = 9973.0 * (ee @ np.array([1.0, 2.0, 3.0]))[:, None] + np.array([0.0, 2.1, 4.2])
        action[:, 0, :3] += self.jitter * np.sin(phase)
        return action


register_policy(KIND, options=JitterOptions)(JitteredExpert)
