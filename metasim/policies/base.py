"""The policy protocol and the policy registry.

A policy is reset with the task's instruction (for all envs, or for `env_ids` when
envs restart at different times) and maps an observation batch to an action chunk
(B, H, D) in its declared action convention. The harness owns chunk execution (execute
k of H, or temporal ensembling) and converts actions into the env's canonical space.

`act(obs, env_ids)` names the envs that need a fresh chunk; a policy may compute every
row anyway (rows outside `env_ids` are ignored). A chunk shorter than H for some env is
padded with rows that are all NaN. A policy that fails for some envs only raises
`PolicyFailure` carrying the chunk for the others and the reason per failed env.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from metasim.scene.compile import CompiledScene


@dataclass(frozen=True)
class PolicyContext:
    """What a policy may know about the env it drives, fixed for the env's lifetime."""

    compiled: CompiledScene
    num_envs: int
    action_space: str
    object_names: tuple[str, ...]
    fixture_bodies: tuple[str, ...]
    fixture_sites: tuple[str, ...]
    control_dt: float
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        compiled: CompiledScene,
        num_envs: int,
        action_space: str,
        options: dict[str, Any] | None = None,
    ) -> PolicyContext:
        """The context of a policy driving `num_envs` envs of `compiled`."""
        from metasim.envs.vec_env import scene_parts

        objects, bodies, sites = scene_parts(compiled)
        return cls(
            compiled=compiled,
            num_envs=num_envs,
            action_space=action_space,
            object_names=objects,
            fixture_bodies=bodies,
            fixture_sites=sites,
            control_dt=compiled.control_dt,
            options=dict(options or {}),
        )


class Policy(Protocol):
    action_space: str

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None: ...

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        """(B, H, D) action chunk for the observation batch (rows `env_ids` needed)."""
        ...


class PolicyFailure(Exception):
    """Some envs got no usable actions: `failed` maps env index -> reason, `chunk` holds
    the (B, H, D) actions of the others."""

    def __init__(self, chunk: np.ndarray, failed: dict[int, str]) -> None:
        self.chunk = chunk
        self.failed = failed
        first = next(iter(failed.items()), (None, ""))
        super().__init__(f"{len(failed)} env(s) failed, e.g. env {first[0]}: {first[1]}")


PolicyFactory = Callable[[PolicyContext], Policy]
_REGISTRY: dict[str, PolicyFactory] = {}


def register_policy(name: str) -> Callable[[PolicyFactory], PolicyFactory]:
    def deco(factory: PolicyFactory) -> PolicyFactory:
        _REGISTRY[name] = factory
        return factory

    return deco


def _register_builtin() -> None:
    """Import the modules whose factories register the built-in policy kinds."""
    import importlib

    for mod in ("scripted", "remote", "lerobot_policy"):
        importlib.import_module(f"metasim.policies.{mod}")


def make_policy(name: str, ctx: PolicyContext) -> Policy:
    _register_builtin()

    if name not in _REGISTRY:
        from metasim.errors import MetasimInputError

        raise MetasimInputError(
            "policy config",
            [f"kind: unknown policy kind {name!r}; expected one of {sorted(_REGISTRY)}"],
        )
    return _REGISTRY[name](ctx)


def registered_policies() -> list[str]:
    _register_builtin()

    return sorted(_REGISTRY)
