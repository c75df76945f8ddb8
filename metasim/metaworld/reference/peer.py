"""LeRobot's own Meta-World env (`lerobot.envs.metaworld.MetaworldEnv`, its
`preprocess_observation` and env processors, LeRobot 0.4.4) run in the Meta-World
reference venv, driven over a pipe: the peer of metasim's `lerobot_metaworld` preset
(issue 31, the peer-code convention test). torch and lerobot come from the peer layer
(`metasim.reference.peerlayer`, built on first use); the reference venv itself is unchanged.

    with LeRobotMetaworldPeer() as peer:
        reset = peer.make("push-v3", "MT10", variation=3, seed=0)
        step = peer.step(action)                               # (4,) policy action
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from metasim.metaworld.reference.simulator import MetaWorldRefError, ensure_venv
from metasim.reference import peerlayer, refvenv
from metasim.reference.refvenv import RefWorker

WORKER = Path(__file__).with_name("lerobot_peer.py")


class LeRobotMetaworldPeer(RefWorker):
    """One worker process running LeRobot's Meta-World env. Not thread-safe."""

    label = "LeRobot Meta-World peer"
    error = MetaWorldRefError

    def __init__(
        self,
        python: Path | None = None,
        layer: Path | None = None,
        timeout: float = 600.0,
        startup: float = 300.0,
    ) -> None:
        env = refvenv.worker_env(PEER_PATH=str(layer or peerlayer.ensure_layer()))
        super().__init__(python or ensure_venv(), WORKER, env, timeout, startup)

    def make(
        self, task: str, benchmark: str = "MT10", variation: int = 0, seed: int = 0
    ) -> dict[str, Any]:
        """LeRobot's env for `task` on the benchmark's variation, reset with `seed` (see
        the worker's `make`): obs, mocap_pos, ctrl, max_steps."""
        return self.call("make", task=task, benchmark=benchmark, variation=variation, seed=seed)

    def step(self, action: np.ndarray) -> dict[str, Any]:
        """One (4,) policy action through LeRobot's env postprocessor and env.step: sent,
        obs, mocap_pos, ctrl, terminated."""
        return self.call("step", action=np.asarray(action, dtype=np.float32).reshape(4))
