"""The policy protocol and the policy registry.

A policy is reset with the task's instruction (for all envs, or for `env_ids` when
envs restart at different times) and maps an observation batch to an action chunk
(B, H, D). The harness owns chunk execution (execute k of H).
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


class Policy(Protocol):
    action_space: str

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None: ...

    def act(self, obs: dict[str, Any]) -> np.ndarray:
        """(B, H, D) action chunk for the observation batch."""
        ...


PolicyFactory = Callable[[PolicyContext], Policy]
_REGISTRY: dict[str, PolicyFactory] = {}


def register_policy(name: str) -> Callable[[PolicyFactory], PolicyFactory]:
    def deco(factory: PolicyFactory) -> PolicyFactory:
        _REGISTRY[name] = factory
        return factory

    return deco


def make_policy(name: str, ctx: PolicyContext) -> Policy:
    import metasim.policies.scripted  # noqa: F401  (registers the built-in policies)

    if name not in _REGISTRY:
        raise KeyError(f"unknown policy kind {name!r}; expected one of {sorted(_REGISTRY)}")
    return _REGISTRY[name](ctx)


def registered_policies() -> list[str]:
    import metasim.policies.scripted  # noqa: F401

    return sorted(_REGISTRY)
