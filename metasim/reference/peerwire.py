"""The worker side of a LeRobot peer (the peer-code convention tests): LeRobot's own
env for a benchmark, built and driven as `lerobot-eval` does (LeRobot 0.4.4,
lerobot/scripts/lerobot_eval.py), inside that benchmark's reference venv. stdlib + numpy
here (torch and lerobot come from the peer layer, `PEER_PATH`, appended to `sys.path`);
never imports metasim.

refwire loads this file by path and hands it, with the benchmark's reference worker module,
to the benchmark's harness (`<benchmark>/reference/lerobot_peer.py`), whose
`commands(peerwire, worker)` says only what is its benchmark's: the env config, which of
`make_env`'s envs to take, how the episode is synced, what a reply adds. What every peer
does is here: `make_env(cfg, n_envs=1)` and `make_env_pre_post_processors`; per step
`preprocess_observation` -> `add_envs_task` -> the env preprocessor, and actions through
the env postprocessor, `.numpy()`, `env.step`.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from contextlib import redirect_stdout
from typing import Any

import numpy as np


class LeRobotEnv:
    """One LeRobot vector env (one sub-env) and its env processors; actions (action_dim,)."""

    def __init__(self, action_dim: int) -> None:
        if os.environ["PEER_PATH"] not in sys.path:
            sys.path.append(os.environ["PEER_PATH"])  # after the venv's own packages
        self.action_dim = action_dim
        self.vec: Any = None
        self.pre: Any = None
        self.post: Any = None

    def make(self, cfg: Any, pick: Callable[[Any], Any]) -> Any:
        """`make_env(cfg, n_envs=1)` (what it prints kept out of the worker's log), the
        vector env `pick` takes from what it returned, and its processors; returns the
        vector env's sub-env (the closed previous env, if any, replaced)."""
        from lerobot.envs.factory import make_env, make_env_pre_post_processors

        self.close()
        with redirect_stdout(io.StringIO()):
            self.vec = pick(make_env(cfg, n_envs=1))
        self.pre, self.post = make_env_pre_post_processors(cfg, None)
        return self.vec.envs[0]

    def view(self, obs: dict[str, Any]) -> dict[str, Any]:
        """What a LeRobot policy's own preprocessor receives: the images
        (`observation.image`, `observation.images.*`) as (H, W, 3) uint8 (LeRobot's are
        k/255 floats, CHW; exact back to k), `observation.state` as LeRobot computed it
        (float64 here, its dtype in `state_dtype`), and the task string."""
        from lerobot.envs.utils import add_envs_task, preprocess_observation

        seen = self.pre(add_envs_task(self.vec, preprocess_observation(obs)))
        out: dict[str, Any] = {"task": list(seen["task"])}
        for key, value in seen.items():
            if key == "observation.image" or key.startswith("observation.images."):
                img = (value[0] * 255).round().byte().permute(1, 2, 0).numpy()
                out[key] = np.ascontiguousarray(img)
            elif key == "observation.state":
                out[key] = value[0].double().numpy()
                out["state_dtype"] = str(value.dtype)
        return out

    def step(self, action: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """One policy action as `lerobot-eval` sends it: a (1, action_dim) float32 tensor
        through the env postprocessor, `.numpy()`, `env.step`. Returns the reply (the array
        env.step received, `sent`, its dtype, the observation after the step, whether the
        episode terminated) and env.step's info."""
        import torch

        act = np.asarray(action, dtype=np.float32).reshape(1, self.action_dim)
        sent = self.post({"action": torch.as_tensor(act)})["action"].to("cpu").numpy()
        obs, _, terminated, _, info = self.vec.step(sent)
        reply = {
            "sent": np.asarray(sent[0]),
            "sent_dtype": str(sent.dtype),
            "obs": self.view(obs),
            "terminated": bool(terminated[0]),
        }
        return reply, info

    def close(self) -> None:
        if self.vec is not None:
            self.vec.close()
            self.vec = None
