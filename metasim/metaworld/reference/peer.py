"""LeRobot's own Meta-World env (`lerobot.envs.metaworld.MetaworldEnv`, its
`preprocess_observation` and env processors, LeRobot 0.4.4) run in the Meta-World
reference venv, driven over a pipe: the peer of metasim's `lerobot_metaworld` preset
(the peer-code convention test). torch and lerobot come from the peer layer
(`metasim.reference.peerlayer`, built on first use); the reference venv itself is unchanged.

    with LeRobotMetaworldPeer() as peer:
        reset = peer.make("push-v3", "MT10", variation=3, seed=0)
        step = peer.step(action)                               # (4,) policy action
"""

from __future__ import annotations

from typing import Any

from metasim.metaworld.reference.simulator import SPEC
from metasim.reference.peer import LeRobotPeer


class LeRobotMetaworldPeer(LeRobotPeer):
    """One worker process running LeRobot's Meta-World env. Not thread-safe."""

    spec = SPEC
    action_dim = 4

    def make(
        self, task: str, benchmark: str = "MT10", variation: int = 0, seed: int = 0
    ) -> dict[str, Any]:
        """LeRobot's env for `task` on the benchmark's variation, reset with `seed` (see
        the harness's `make`): obs, mocap_pos, ctrl, max_steps. `step` replies add
        mocap_pos and ctrl."""
        return self.ask("make", locals())
