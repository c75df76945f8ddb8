"""Gymnasium vector envs; every built-in scene is registered as `metasim/<scene>-v0`.

import gymnasium as gym, metasim.envs
env = gym.make_vec("metasim/lift_cube-v0", num_envs=16, vectorization_mode="vector_entry_point")
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from metasim.envs.vec_env import MetasimVectorEnv, episode_seed
from metasim.paths import SCENES

__all__ = ["MetasimVectorEnv", "episode_seed", "register_builtin", "registered_ids"]


def _vector_entry(scene: str) -> Any:
    def make(num_envs: int = 1, **kwargs: Any) -> MetasimVectorEnv:
        return MetasimVectorEnv(scene, num_envs=num_envs, **kwargs)

    return make


def register_builtin() -> list[str]:
    """Register every scene in scenes/ (idempotent); return the ids."""
    ids = []
    for path in sorted(SCENES.glob("*.yaml")):
        env_id = f"metasim/{path.stem}-v0"
        if env_id not in gym.registry:
            gym.register(id=env_id, vector_entry_point=_vector_entry(str(path)))
        ids.append(env_id)
    return ids


def registered_ids() -> list[str]:
    return sorted(k for k in gym.registry if k.startswith("metasim/"))


register_builtin()
