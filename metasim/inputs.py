"""Bounded reads of input files that are not read whole as text (guards.py holds the rest):

- `regular_file(path)`: the file's size, refusing what is no regular file once symlinks
  are followed (a pipe, a device such as /dev/zero, a folder): reading one could block
  or never end.
- `read_gzip(path, env)`: a gzip file decompressed in a stream that stops one byte past
  the limit `env` (METASIM_MODEL_MAX_BYTES for a prebuilt's saved model), so a gzip bomb
  costs at most the limit in memory, never the bomb's size. The compressed file is held
  to the same limit first.
Each refusal is an input error naming the file (exit 2).
"""

from __future__ import annotations

import gzip
import os
import stat
import zlib
from pathlib import Path

from metasim import guards  # noqa: F401  (registers METASIM_NPY_MAX_BYTES in LIMITS)
from metasim.errors import MetasimInputError
from metasim.yamlio import LIMITS, limit

LIMITS["METASIM_MODEL_MAX_BYTES"] = 1 << 30  # one saved model (.mjb), decompressed

CHUNK = 1 << 20


def regular_file(path: Path, what: str = "file") -> int:
    """The size of `path`, which must be a regular file (after following symlinks)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise MetasimInputError(str(path), [f"cannot read it ({exc.strerror or exc})"]) from None
    if not stat.S_ISREG(st.st_mode):
        raise MetasimInputError(
            str(path),
            [f"expected a {what} (a regular file), got a pipe, device or folder"],
            "Replace it with the file itself",
        )
    return st.st_size


def _too_big(path: Path, what: str, cap: int, env: str) -> MetasimInputError:
    return MetasimInputError(
        str(path),
        [f"the {what} is over the limit of {cap} bytes ({env})"],
        f"Raise it with {env}=<bytes> if the file is meant to be this large",
    )


def read_gzip(path: Path, env: str, what: str = "gzip file") -> bytes:
    """The decompressed bytes of the gzip file `path`, at most `limit(env)` of them
    (module doc); not gzip, truncated or over the limit is an input error."""
    cap = limit(env)
    if regular_file(path, what) > cap:
        raise _too_big(path, f"{what} (compressed)", cap, env)
    parts: list[bytes] = []
    total = 0
    try:
        with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as f:
            while chunk := f.read(min(CHUNK, cap + 1 - total)):
                total += len(chunk)
                if total > cap:
                    raise _too_big(path, f"{what} decompressed", cap, env)
                parts.append(chunk)
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise MetasimInputError(str(path), [f"not a readable {what} ({exc})"]) from None
    return b"".join(parts)


def check_npz(path: Path, what: str = "array file") -> None:
    """Refuse an `.npz` whose arrays' declared sizes sum past METASIM_NPY_MAX_BYTES before
    any is decompressed (Python's zip reader never yields more than a member declares),
    or that is no regular file or no zip archive."""
    import zipfile

    cap = limit("METASIM_NPY_MAX_BYTES")
    if regular_file(path, what) > cap:
        raise _too_big(path, what, cap, "METASIM_NPY_MAX_BYTES")
    try:
        with zipfile.ZipFile(path) as archive:
            total = sum(info.file_size for info in archive.infolist())
    except (OSError, zipfile.BadZipFile) as exc:
        raise MetasimInputError(str(path), [f"not a readable .npz {what} ({exc})"]) from None
    if total > cap:
        raise _too_big(path, f"{what} decompressed", cap, "METASIM_NPY_MAX_BYTES")


def index_list(text: str, flag: str, noun: str, max_index: int) -> list[int]:
    """'0-4,10' -> [0, 1, 2, 3, 4, 10], sorted and unique; a part that is not an index or
    a range (a reversed one too), an index past `max_index` or none at all is an input
    error naming `flag` and `noun` (each range is checked before it is expanded)."""
    out: set[int] = set()
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        if not (lo.isdigit() and (hi.isdigit() or not dash)) or (dash and int(hi) < int(lo)):
            raise MetasimInputError(
                flag, [f"{text!r}: expected {noun}s like '0-4' or '0,3,7' (low before high)"]
            )
        first, last = int(lo), int(hi or lo)
        if last > max_index:
            raise MetasimInputError(
                flag, [f"{text!r}: {noun} {last} is out of range; expected 0..{max_index}"]
            )
        out.update(range(first, last + 1))
    if not out:
        raise MetasimInputError(flag, [f"{text!r} names no {noun}"])
    return sorted(out)
