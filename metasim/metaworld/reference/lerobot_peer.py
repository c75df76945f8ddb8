"""LeRobot's own Meta-World env as the peer of metasim's `lerobot_metaworld` preset: runs
INSIDE the Meta-World reference venv (.cache/metaworld-ref: metaworld 3.1.1, MuJoCo 3.3.0)
with the LeRobot peer layer (`metasim.reference.peerlayer`, `PEER_PATH`) appended to `sys.path`;
never imports metasim.

Served by `metasim/reference/refwire.py`, which hands it `metasim/reference/peerwire.py` (the
env built and driven as `lerobot-eval` does: here `make_env(MetaworldEnv config, n_envs=1)`,
a SyncVectorEnv of `lerobot.envs.metaworld.MetaworldEnv`: MT1, corner2 moved to
(0.75, 0.075, 0.7), 480x480) and the Meta-World reference worker module (whose `_split`
gives the benchmark's Tasks).

Synced state: LeRobot's env draws a fresh object/goal placement at every reset (it
unfreezes the package's rand_vec); to compare on the same state, the package env inside
it is given variation k of the benchmark's split (`set_task`, as the package's own loops
and metasim's episode k use it) before LeRobot's `reset`. Everything LeRobot's code does
from there (reset, render, flip, agent_pos, task text, action path) is its own.

Commands: make(task, benchmark, variation, seed) · step(action (4,)) · close.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


class Peer:
    """One LeRobot Meta-World vector env (`peerwire.LeRobotEnv`) and the reference worker
    whose `_split` gives the benchmark's Tasks."""

    def __init__(self, peerwire: Any, worker: Any) -> None:
        self.lerobot = peerwire.LeRobotEnv(action_dim=4)
        self.base = worker.Worker()

    def _physics(self) -> dict[str, Any]:
        """The package env's command state: mocap target (nmocap, 3), ctrl (nu,)."""
        data = self.lerobot.vec.envs[0]._env.data
        return {"mocap_pos": np.array(data.mocap_pos), "ctrl": np.array(data.ctrl)}

    def make(
        self, task: str, benchmark: str = "MT10", variation: int = 0, seed: int = 0
    ) -> dict[str, Any]:
        """LeRobot's env for `task` (e.g. "push-v3") on variation `variation` of
        `benchmark`'s train split (benchmark seed 0, as metasim's episodes), reset with
        `seed`. Returns the reset observation (`peerwire.LeRobotEnv.view`), the command
        state and max_steps."""
        from lerobot.envs.configs import MetaworldEnv as MetaworldConfig

        cfg = MetaworldConfig(task=f"metaworld-{task}")
        env = self.lerobot.make(cfg, lambda envs: next(iter(envs.values()))[0])
        _, tasks = self.base._split(benchmark, "train", 0, task)
        mine = [t for t in tasks if t.env_name == task]
        env._env.set_task(mine[variation])  # the synced state (module doc)
        obs, _ = self.lerobot.vec.reset(seed=[seed])
        return {
            "obs": self.lerobot.view(obs),
            "max_steps": int(env._max_episode_steps),
            **self._physics(),
        }

    def step(self, action: Any) -> dict[str, Any]:
        """One policy action (4,) through LeRobot's action path (`peerwire.LeRobotEnv.step`;
        LeRobot resets by itself when the episode terminated); adds the mocap target and
        ctrl after the step."""
        reply, _ = self.lerobot.step(action)
        return {**reply, **self._physics()}


def commands(peerwire: Any, worker: Any) -> dict[str, Callable[..., dict[str, Any]]]:
    """The commands `metasim/reference/refwire.py` serves (it runs this file by path and
    hands it peerwire.py and the Meta-World reference worker module)."""
    peer = Peer(peerwire, worker)
    return {"make": peer.make, "step": peer.step}
