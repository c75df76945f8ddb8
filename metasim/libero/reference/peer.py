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

from metasim.libero.reference.simulator import SPEC
from metasim.reference.peer import LeRobotPeer


class LeRobotLiberoPeer(LeRobotPeer):
    """One worker process running LeRobot's LIBERO env. Not thread-safe."""

    spec = SPEC
    action_dim = 7

    def peer_env(self, layer: Path) -> dict[str, str]:
        """LIBERO's config points at the peer's init-state files (the harness's doc)."""
        folder = str(layer.parent / f"{layer.name}-libero")
        return {"LIBERO_CONFIG_PATH": folder, "PEER_LIBERO_DIR": folder}

    def make(self, suite: str, task: int, init: int = 0, seed: int = 0) -> dict[str, Any]:
        """LeRobot's env for the task, reset at LIBERO init state `init` with `seed` (see
        the harness's `make`): obs, info, init_qpos, init_qvel, state, controller. `step`
        replies add controller and success."""
        return self.ask("make", locals())
