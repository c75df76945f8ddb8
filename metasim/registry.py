"""One registry idiom for everything metasim looks up by name: backends, policy kinds,
perturbation axes, predicate / fixture / observation kinds, task sources and CLI verbs.

A `Registry` is a name -> entry table, filled by its `register` decorator in the module
that defines the entry; nothing else lists the entries. The first time a registry is read
it imports

- every module of its built-in `packages` (found with pkgutil, so a new module there needs
  no edit anywhere else), and
- every plug-in: the modules named in the `metasim.plugins` entry-point group of any
  installed distribution (metasim's own benchmarks, e.g. `libero = "metasim.libero"`, are
  declared there in pyproject.toml, the same way a third-party benchmark declares its own).

A test (or a script) may also register entries by importing its own module: the decorator
is the same.

The module is the bottom layer: it imports nothing from metasim.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar, overload

T = TypeVar("T")
PLUGIN_GROUP = "metasim.plugins"

_plugins_loaded = False


class UnknownName(KeyError):
    """A name no entry of the registry has; the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


def load_plugins() -> None:
    """Import every module declared in the `metasim.plugins` entry-point group (once)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        importlib.import_module(ep.value.split(":")[0])


def importing(but: str) -> bool:
    """Whether a metasim module other than `but` (and its parent packages) is being
    imported right now (its import started and has not finished). Loading the plug-ins
    then could import a module that is only partly there (a plug-in importing it back):
    a module that reads a registry at import time waits (see `metasim.envs`)."""
    mine = {but, *(but.rsplit(".", k)[0] for k in range(1, but.count(".") + 1))}
    for name, module in list(sys.modules.items()):
        if name.startswith("metasim") and name not in mine:
            if getattr(getattr(module, "__spec__", None), "_initializing", False):
                return True
    return False


def import_package(package: str) -> None:
    """Import `package` and every module under it (recursively)."""
    pkg = importlib.import_module(package)
    for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), prefix=f"{package}."):
        importlib.import_module(info.name)


class Registry(Generic[T]):
    """Entries of one kind (`what`: "backend", "policy kind", ...) by name.

    `packages`: the packages whose modules register the built-in entries (imported on the
    first read, with the plug-ins)."""

    def __init__(self, what: str, packages: tuple[str, ...] = ()) -> None:
        self.what = what
        self.packages = packages
        self._entries: dict[str, T] = {}
        self._loaded = False
        self._listeners: list[Callable[[str, T], None]] = []

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, entry: T) -> T: ...

    def register(self, name: str, entry: T | None = None) -> T | Callable[[T], T]:
        """`@registry.register(name)` on a definition, or `registry.register(name, entry)`.
        Registering a name twice with a different entry is an error (two plug-ins
        claiming one name), re-importing the same module is not."""

        def add(value: T) -> T:
            old = self._entries.get(name)
            if old is not None and old is not value and _origin(old) != _origin(value):
                raise ValueError(
                    f"{self.what} {name!r} registered twice: {_origin(old)} and {_origin(value)}"
                )
            self._entries[name] = value
            for listener in self._listeners:
                listener(name, value)
            return value

        return add if entry is None else add(entry)

    def on_register(self, listener: Callable[[str, T], None]) -> None:
        """Call `listener(name, entry)` for every entry registered from now on (what is
        built from a registry's entries, e.g. gym ids, stays complete when a plug-in
        registers after it was built: a plug-in that is itself being imported when the
        registry is first read registers its entries only once its import finishes)."""
        self._listeners.append(listener)

    def load(self) -> None:
        """Import the built-in packages and the plug-ins (once)."""
        if self._loaded:
            return
        self._loaded = True
        for package in self.packages:
            import_package(package)
        load_plugins()

    def __getitem__(self, name: str) -> T:
        self.load()
        if name not in self._entries:
            raise UnknownName(f"unknown {self.what} {name!r}; expected one of {self.names()}")
        return self._entries[name]

    def get(self, name: str) -> T | None:
        self.load()
        return self._entries.get(name)

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._entries

    def registered(self) -> list[tuple[str, T]]:
        """The entries registered so far, without importing anything."""
        return sorted(self._entries.items())

    def names(self) -> list[str]:
        self.load()
        return sorted(self._entries)

    def items(self) -> Iterator[tuple[str, T]]:
        self.load()
        return iter(sorted(self._entries.items()))

    def unregister(self, name: str) -> None:
        """Remove `name` (tests that register a throw-away entry clean up with this)."""
        self._entries.pop(name, None)


def _origin(value: object) -> str:
    """Where an entry was defined (module.qualname), to name both sides of a clash."""
    target = value if hasattr(value, "__qualname__") else type(value)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', '?')}"
