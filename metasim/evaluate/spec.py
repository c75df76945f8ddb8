"""The rollout spec: everything `run_task` needs besides the scene, typed and frozen.

Built once from the validated config (`EvalConfig.rollout`, forced by `compose()`; the
policy options were validated into the kind's model when the config was), so a bad
policy option is refused before any run folder exists; carried by every `Shard` to
the executor and into `run_task`. Picklable (what a Ray worker receives).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from metasim.evaluate.capacity import backend_options
from metasim.policies.base import PolicyOptions, policy_options
from metasim.policies.conventions import ActionConvention
from metasim.policies.observation import ObservationSpec


@dataclass(frozen=True)
class RolloutSpec:
    """A policy kind with its validated options, chunk execution, seed and env settings.

    `execute`: actions executed of each chunk (None: all of it); `ensemble`: temporal
    ensembling with weight exp(ensemble * age) instead (a new chunk every step).
    `threads`: physics threads (None: all cores); `render`: the camera renderer.
    """

    policy: str
    options: PolicyOptions
    seed: int = 0
    num_envs: int = 1
    backend: str = "mujoco"
    render: str | None = None  # camera renderer, opengl | warp (None: the scene's)
    render_spp: int | None = None  # warp: samples per pixel per axis (None: the scene's)
    nconmax: int | None = None  # backend=warp: contacts per world (None: its default)
    njmax: int | None = None  # backend=warp: constraint rows per world (None: its default)
    execute: int | None = None
    ensemble: float | None = None
    threads: int | None = None

    def __post_init__(self) -> None:
        backend_options(self.backend, self.nconmax, self.njmax)  # for backend=warp only

    @classmethod
    def of(
        cls,
        policy: str,
        options: Mapping[str, Any] | None = None,
        **kw: Any,
    ) -> RolloutSpec:
        """A spec from plain data (library callers, tests): `options` validated into the
        model kind `policy` registered (an input error naming the key). `metasim eval`
        and `serve` build theirs from the typed config instead (`EvalConfig.rollout`)."""
        return cls(policy=policy, options=policy_options(policy, options or {}), **kw)

    @property
    def actions(self) -> ActionConvention:
        """The policy's declared action convention."""
        return self.options.actions

    @property
    def observation(self) -> ObservationSpec:
        """The policy's declared observation spec."""
        return self.options.observation
