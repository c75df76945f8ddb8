"""Kill a process at the i-th file-system change it makes (an injected fault, issue #23).

`kill_at(i)` wraps every call that changes files (create, write-open, rename, replace,
delete, mkdir, rmdir) in `os`, `io` and the builtins; the i-th one (from 0) ends the
process with `os._exit(KILLED)` before it runs, as a kill -9 would: no `finally`, no
cleanup, the kernel drops the locks. With i < 0 nothing is killed and the counter says
how many changes there were. `reverse=True` also lists every folder in the reverse of
the file system's order (`os.scandir`, `os.listdir`): which file a folder removal takes
first depends on the file system, and a commit must be safe in any order.
"""

from __future__ import annotations

import builtins
import io
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

KILLED = 77  # the exit status of a killed child
_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_NAMES = ("rename", "replace", "unlink", "remove", "rmdir", "mkdir")


class _Counter:
    def __init__(self, at: int) -> None:
        self.at, self.n = at, 0

    def step(self) -> None:
        if self.n == self.at:
            os._exit(KILLED)
        self.n += 1


def _wrap(fn: Callable[..., Any], counter: _Counter, writes: Callable[..., bool]) -> Any:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if writes(*args, **kwargs):
            counter.step()
        return fn(*args, **kwargs)

    return wrapped


def _opens_for_write(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> bool:
    return any(c in str(kwargs.get("mode", mode)) for c in "wax+")


def _os_open_writes(path: Any, flags: int, *args: Any, **kwargs: Any) -> bool:
    return bool(flags & _WRITE)


class _Listing:
    """`os.scandir`'s result, reversed (an iterator that is also a context manager)."""

    def __init__(self, entries: list[Any]) -> None:
        self._it = iter(entries[::-1])

    def __iter__(self) -> _Listing:
        return self

    def __next__(self) -> Any:
        return next(self._it)

    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def close(self) -> None:
        return None


def _reverse_listings() -> list[tuple[Any, str, Any]]:
    scandir, listdir = os.scandir, os.listdir

    def reversed_scandir(*args: Any, **kwargs: Any) -> _Listing:
        with scandir(*args, **kwargs) as it:
            return _Listing(list(it))

    os.scandir = reversed_scandir  # type: ignore[assignment]
    os.listdir = lambda *a, **k: listdir(*a, **k)[::-1]
    return [(os, "scandir", scandir), (os, "listdir", listdir)]


@contextmanager
def kill_at(at: int, reverse: bool = False) -> Iterator[_Counter]:
    """Count (and kill at number `at`) every file-system change made inside the block."""
    counter = _Counter(at)
    saved: list[tuple[Any, str, Any]] = [(os, n, getattr(os, n)) for n in _NAMES]
    saved += [(builtins, "open", builtins.open), (io, "open", io.open), (os, "open", os.open)]
    if reverse:
        saved += _reverse_listings()
    for n in _NAMES:
        setattr(os, n, _wrap(getattr(os, n), counter, lambda *a, **k: True))
    opened = _wrap(builtins.open, counter, _opens_for_write)
    builtins.open = io.open = opened
    os.open = _wrap(os.open, counter, _os_open_writes)
    try:
        yield counter
    finally:
        for module, name, fn in saved:
            setattr(module, name, fn)
