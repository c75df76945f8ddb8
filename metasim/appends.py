"""Appends to metasim's append-only results files (collect's meta/metasim_episodes.jsonl,
xcheck.jsonl) without ever following a symlink or blocking on a pipe:

- `open_append(path)`: a file descriptor for appending to `path`, which must be absent
  (it is created) or a regular file; a symlink (`O_NOFOLLOW`), a pipe, a device or a
  folder is an input error naming the file (exit 2), and nothing is written.
- `append_text(path, text)`: `text` appended through `open_append`, whole.
- `cut_to(path, size)`: the file cut to `size` bytes (a killed append's partial last
  line), opened the same way.

Whole output files are replaced atomically instead (`guards.replacing`); these files
are append-only by design, so a rename over them would lose concurrent readers' view.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from metasim.errors import MetasimInputError

HINT = "Replace it with the file metasim wrote, or choose another folder"


def _refusal(path: Path, why: str) -> MetasimInputError:
    return MetasimInputError(str(path), [why], HINT)


def _open(path: Path, flags: int) -> int:
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refusal(path, "is a symbolic link; metasim never writes through one") from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise _refusal(path, "expected a regular file, got a pipe, device or folder") from None
        raise _refusal(path, f"cannot write it ({exc.strerror or exc})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _refusal(path, "expected a regular file, got a pipe, device or folder")
    return fd


def open_append(path: Path) -> int:
    """A descriptor appending to the regular file `path` (created if absent); module doc."""
    return _open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def append_text(path: Path, text: str) -> None:
    """Append `text` (UTF-8) to `path` through `open_append`."""
    fd = open_append(path)
    try:
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def cut_to(path: Path, size: int) -> None:
    """Truncate the regular file `path` to `size` bytes (never through a symlink)."""
    fd = _open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)
