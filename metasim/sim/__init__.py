"""Simulation layer: the handler API and one subpackage per backend (same module names).

Each backend subpackage registers itself in `BACKENDS` from its `__init__.py` with a
loader that imports its handler module only when the backend is asked for (MJX imports
JAX, Warp initializes its devices: seconds each), so listing backends costs nothing and a
backend whose extra is not installed is still known by name.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from metasim.registry import Registry, UnknownName
from metasim.sim.base import Handler
from metasim.sim.state import Kinematics, ModelEdit, SimState, UnsupportedScene

BackendLoader = Callable[[], type[Handler]]


class _Backends(Registry[BackendLoader]):
    """The registry of backends: its built-in package is every subpackage of `metasim.sim`,
    imported without its modules (the handlers load when their backend is asked for)."""

    def load(self) -> None:
        if not self._loaded:
            for info in pkgutil.iter_modules(__path__, prefix=f"{__name__}."):
                if info.ispkg:
                    importlib.import_module(info.name)
        super().load()


# Backend name -> loader of its `Handler` subclass; filled by `metasim.sim.<backend>`.
BACKENDS = _Backends("backend")


def get_backend(name: str) -> type[Handler]:
    """The handler class of backend `name` (its module imported on first use)."""
    try:
        loader = BACKENDS[name]
    except UnknownName:
        raise KeyError(f"unknown backend {name!r}; expected one of {BACKENDS.names()}") from None
    try:
        return loader()
    except ModuleNotFoundError as exc:
        raise KeyError(f"backend {name!r} is not available here ({exc})") from None


def backend_fidelity(name: str) -> str:
    """What backend `name` reproduces of native MuJoCo, in words (its package's `FIDELITY`;
    the run manifest records it). Reads the package only, not its handler."""
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError:
        return "not stated (a backend outside metasim.sim)"
    return str(getattr(module, "FIDELITY", "not stated"))


def backend_names() -> list[str]:
    """Every registered backend (available here or not)."""
    return BACKENDS.names()


__all__ = [
    "BACKENDS",
    "Handler",
    "Kinematics",
    "ModelEdit",
    "SimState",
    "UnsupportedScene",
    "backend_fidelity",
    "backend_names",
    "get_backend",
]
