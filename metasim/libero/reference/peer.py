"""LeRobot's own LIBERO env (`lerobot.envs.libero.LiberoEnv`, its `preprocess_observation`
and env processors, LeRobot 0.4.4) run in the LIBERO reference venv, driven over a pipe:
the peer of metasim's `lerobot_libero` preset (issue 31, the peer-code convention test).

torch and lerobot come from the peer layer (`metasim.reference.peerlayer`, built on first use),
appended to the worker's `sys.path`; the reference venv itself is unchanged.

    with LeRobotLiberoPeer() as peer:
        reset = peer.make("libero_goal", 3, init=7, seed=11)  # LiberoEnv, reset
        step = peer.step(action)                               # (7,) policy action
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from metasim.libero.reference.simulator import RefSimError, ensure_venv
from metasim.reference import peerlayer, refvenv
from metasim.reference.refvenv import RefWorker

WORKER = Path(__file__).with_name("lerobot_peer.py")


class LeRobotLiberoPeer(RefWorker):
    """One worker process running LeRobot's LIBERO env. Not thread-safe."""

    label = "LeRobot LIBERO peer"
    error = RefSimError

    def __init__(
        self,
        python: Path | None = None,
        layer: Path | None = None,
        timeout: float = 600.0,
        startup: float = 300.0,
    ) -> None:
        layer = layer or peerlayer.ensure_layer()
        # LIBERO's config points at the peer's init-state files (the worker's doc).
        folder = layer.parent / f"{layer.name}-libero"
        env = refvenv.worker_env(
            LIBERO_CONFIG_PATH=str(folder), PEER_LIBERO_DIR=str(folder), PEER_PATH=str(layer)
        )
        super().__init__(python or ensure_venv(), WORKER, env, timeout, startup)

    def make(self, suite: str, task: int, init: int = 0, seed: int = 0) -> dict[str, Any]:
        """LeRobot's env for the task, reset at LIBERO init state `init` with `seed` (see
        the worker's `make`): obs, info, init_qpos, init_qvel, state, controller."""
        return self.call("make", suite=suite, task=task, init=init, seed=seed)

    def step(self, action: np.ndarray) -> dict[str, Any]:
        """One (7,) policy action through LeRobot's env postprocessor and env.step: sent,
        obs, controller, success."""
        return self.call("step", action=np.asarray(action, dtype=np.float32).reshape(7))
