"""LeRobot's own Meta-World env as the peer of metasim's `lerobot_metaworld` preset: runs
INSIDE the Meta-World reference venv (.cache/metaworld-ref: metaworld 3.1.1, MuJoCo 3.3.0)
with the LeRobot peer layer (`metasim.reference.peerlayer`, `PEER_PATH`) appended to `sys.path`;
never imports metasim.

Served by `metasim/reference/refwire.py`. The env is built and driven as `lerobot-eval` does
(LeRobot 0.4.4): `make_env(MetaworldEnv config, n_envs=1)` (a SyncVectorEnv of
`lerobot.envs.metaworld.MetaworldEnv`: MT1, corner2 moved to (0.75, 0.075, 0.7), 480x480),
`make_env_pre_post_processors`, then per step `preprocess_observation` -> `add_envs_task`
-> the env preprocessor, and actions through the env postprocessor, `.numpy()`, `env.step`.

Synced state: LeRobot's env draws a fresh object/goal placement at every reset (it
unfreezes the package's rand_vec); to compare on the same state, the package env inside
it is given variation k of the benchmark's split (`set_task`, as the package's own loops
and metasim's episode k use it) before LeRobot's `reset`. Everything LeRobot's code does
from there (reset, render, flip, agent_pos, task text, action path) is its own.

Commands: make(task, benchmark, variation, seed) · step(action (4,)) · close.
"""

from __future__ import annotations

import importlib.util
import io
import os
import sys
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np


def _base_worker() -> Any:
    """The Meta-World reference worker's `Worker` (loaded by path), whose `_split` gives
    the benchmark's Tasks."""
    path = Path(__file__).with_name("worker.py")
    spec = importlib.util.spec_from_file_location("metasim_mw_ref_worker", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.Worker()


class Peer:
    """One LeRobot Meta-World vector env (one sub-env) and its env processors."""

    def __init__(self) -> None:
        self.base = _base_worker()
        self.vec: Any = None
        self.pre: Any = None
        self.post: Any = None

    def _view(self, obs: dict[str, Any]) -> dict[str, Any]:
        """What a LeRobot policy's preprocessor receives: `observation.image` (H, W, 3)
        uint8 (LeRobot's k/255 floats, CHW, exact back to k), `observation.state` (4,) as
        LeRobot computed it (its dtype in `state_dtype`) and the task string."""
        from lerobot.envs.utils import add_envs_task, preprocess_observation

        seen = self.pre(add_envs_task(self.vec, preprocess_observation(obs)))
        img = (seen["observation.image"][0] * 255).round().byte().permute(1, 2, 0).numpy()
        state = seen["observation.state"]
        return {
            "task": list(seen["task"]),
            "observation.image": np.ascontiguousarray(img),
            "observation.state": state[0].double().numpy(),
            "state_dtype": str(state.dtype),
        }

    def _physics(self) -> dict[str, Any]:
        """The package env's command state: mocap target (nmocap, 3), ctrl (nu,)."""
        data = self.vec.envs[0]._env.data
        return {"mocap_pos": np.array(data.mocap_pos), "ctrl": np.array(data.ctrl)}

    def make(
        self, task: str, benchmark: str = "MT10", variation: int = 0, seed: int = 0
    ) -> dict[str, Any]:
        """LeRobot's env for `task` (e.g. "push-v3") on variation `variation` of
        `benchmark`'s train split (benchmark seed 0, as metasim's episodes), reset with
        `seed`. Returns the reset observation (see `_view`), the command state and
        max_steps."""
        from lerobot.envs.configs import MetaworldEnv as MetaworldConfig
        from lerobot.envs.factory import make_env, make_env_pre_post_processors

        self.close()
        cfg = MetaworldConfig(task=f"metaworld-{task}")
        with redirect_stdout(io.StringIO()):
            envs = make_env(cfg, n_envs=1)
        self.vec = next(iter(envs.values()))[0]
        self.pre, self.post = make_env_pre_post_processors(cfg, None)
        _, tasks = self.base._split(benchmark, "train", 0, task)
        mine = [t for t in tasks if t.env_name == task]
        self.vec.envs[0]._env.set_task(mine[variation])  # the synced state (module doc)
        obs, _ = self.vec.reset(seed=[seed])
        return {
            "obs": self._view(obs),
            "max_steps": int(self.vec.envs[0]._max_episode_steps),
            **self._physics(),
        }

    def step(self, action: Any) -> dict[str, Any]:
        """One policy action (4,) as `lerobot-eval` sends it: a (1, 4) float32 tensor
        through the env postprocessor, `.numpy()`, `env.step`. Returns the array env.step
        received (`sent`), the observation, the mocap target and ctrl after the step, and
        whether the episode terminated (LeRobot then resets by itself)."""
        import torch

        act = torch.as_tensor(np.asarray(action, dtype=np.float32).reshape(1, 4))
        sent = self.post({"action": act})["action"].to("cpu").numpy()
        obs, _, terminated, _, _ = self.vec.step(sent)
        return {
            "sent": np.asarray(sent[0]),
            "sent_dtype": str(sent.dtype),
            "obs": self._view(obs),
            "terminated": bool(terminated[0]),
            **self._physics(),
        }

    def close(self) -> None:
        if self.vec is not None:
            self.vec.close()
            self.vec = None


def commands() -> dict[str, Callable[..., dict[str, Any]]]:
    """The commands `metasim/reference/refwire.py` serves (it runs this file by path)."""
    sys.path.append(os.environ["PEER_PATH"])  # after the venv's own packages
    peer = Peer()
    return {"make": peer.make, "step": peer.step}
