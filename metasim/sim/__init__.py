"""Simulation layer: the handler API and one subpackage per backend (same module names)."""

from __future__ import annotations

import importlib

from metasim.sim.base import Handler, Kinematics, ModelEdit, SimState, UnsupportedScene

# Backend name -> module holding `Handler` subclass named `BackendHandler`.
BACKENDS = {
    "mujoco": "metasim.sim.mujoco.handler",
    "mjx": "metasim.sim.mjx.handler",
    "warp": "metasim.sim.warp.handler",
}


def get_backend(name: str) -> type[Handler]:
    """The handler class of backend `name` (imported on first use)."""
    if name not in BACKENDS:
        raise KeyError(f"unknown backend {name!r}; expected one of {sorted(BACKENDS)}")
    try:
        module = importlib.import_module(BACKENDS[name])
    except ModuleNotFoundError as exc:
        raise KeyError(f"backend {name!r} is not available here ({exc})") from None
    cls: type[Handler] = module.BackendHandler
    return cls


__all__ = [
    "BACKENDS",
    "Handler",
    "Kinematics",
    "ModelEdit",
    "SimState",
    "UnsupportedScene",
    "get_backend",
]
