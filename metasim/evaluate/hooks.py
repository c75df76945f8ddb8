"""What a caller of the evaluation loop sees while it runs: one hooks object.

`RolloutHooks` is the protocol `run_task` calls; `Hooks` is its no-op base, so a caller
overrides only what it needs (`metasim collect` records `observe`, `metasim report`
films with `on_env` and `on_step`, the cross-checks replay with `on_start` and
`on_applied`). Slots are the env's rows; an episode index of -1 marks an idle slot.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from metasim.envs.vec_env import MetasimVectorEnv


class RolloutHooks(Protocol):
    """The calls of one run of the evaluation loop, in the order they come."""

    def on_env(self, env: MetasimVectorEnv) -> None:
        """Once, when the env exists (before the first reset)."""

    def on_start(self, slots: np.ndarray, episodes: np.ndarray) -> None:
        """Right after env slots `slots` (k,) were reset to start `episodes` (k,): the
        env's state is the episodes' start (read it with `env.handler`)."""

    def observe(self, episodes: np.ndarray, obs: dict[str, Any], actions: np.ndarray) -> None:
        """Before every env step: each slot's episode (B,) (-1: idle or in its settle
        steps, which are not the policy's), the observation and the policy's actions
        (B, D) in its declared convention."""

    def on_applied(self, episodes: np.ndarray, actions: np.ndarray) -> None:
        """After every env step (settle steps included): each slot's episode (B,) and
        the actions (B, D) the simulator's controller received, after runtime action
        noise and latency (`MetasimVectorEnv.applied_actions`)."""

    def on_step(self) -> None:
        """After every env step."""


class Hooks:
    """The hooks that do nothing: subclass it and override the ones you need."""

    def on_env(self, env: MetasimVectorEnv) -> None:
        pass

    def on_start(self, slots: np.ndarray, episodes: np.ndarray) -> None:
        pass

    def observe(self, episodes: np.ndarray, obs: dict[str, Any], actions: np.ndarray) -> None:
        pass

    def on_applied(self, episodes: np.ndarray, actions: np.ndarray) -> None:
        pass

    def on_step(self) -> None:
        pass
