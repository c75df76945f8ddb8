"""Gymnasium vector envs; every task of every task source's suites is registered:
a scene of scenes/ as `metasim/<scene>-v0`, a prefixed task `P:<suite>/<task>` as
`metasim/P.<suite>-<task>-v0` (metasim.scene.sources; gym reads ':' in an id as a module).

import gymnasium as gym, metasim.envs
env = gym.make_vec("metasim/lift_cube-v0", num_envs=16, vectorization_mode="vector_entry_point")
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from metasim.envs.vec_env import MetasimVectorEnv, episode_seed
from metasim.registry import importing
from metasim.scene.sources import SOURCES, TaskSource, all_suites

__all__ = ["MetasimVectorEnv", "episode_seed", "register_builtin", "registered_ids"]


def _vector_entry(scene: str) -> Any:
    def make(num_envs: int = 1, **kwargs: Any) -> MetasimVectorEnv:
        return MetasimVectorEnv(scene, num_envs=num_envs, **kwargs)

    return make


def env_id(ref: str) -> str:
    """The gym id of a task reference (`lift_cube` -> `metasim/lift_cube-v0`,
    `P:suite/3` -> `metasim/P.suite-3-v0`: gym reads ':' as a module and '/' as a
    namespace)."""
    return f"metasim/{ref.replace(':', '.').replace('/', '-')}-v0"


def _register(refs: list[str], ids: list[str]) -> None:
    for ref in refs:
        eid = env_id(ref)
        if eid not in gym.registry:
            gym.register(id=eid, vector_entry_point=_vector_entry(ref))
        if eid not in ids:
            ids.append(eid)


def register_builtin() -> list[str]:
    """Register every task the task sources list in their suites (idempotent); return
    the ids. The scene is loaded when an env is made, not here."""
    ids: list[str] = []
    for refs in all_suites().values():
        _register(refs, ids)
    return ids


def _register_source(_prefix: str, source: TaskSource) -> None:
    """A source registered after this module was imported (a plug-in whose own import
    imported metasim.envs): its suites' ids too."""
    for refs in source.suites().values():
        _register(refs, [])


def registered_ids() -> list[str]:
    return sorted(k for k in gym.registry if k.startswith("metasim/"))


# Every source registered from now on adds its ids. The plug-ins are loaded here (and
# their ids registered) unless another metasim module is being imported: a plug-in
# importing that module back would find it half there; the first registry read after
# that import (eval, collect, ... all read one) loads them, and the listener adds them.
SOURCES.on_register(_register_source)
if importing(__name__):
    for _prefix, _source in SOURCES.registered():
        _register_source(_prefix, _source)
else:
    register_builtin()
