"""Shared bounds on user input, so every verb refuses the same way (exit 2, one paragraph).

- numbers on the command line: `bounded_int(lo, hi)` and `bounded_float(lo, hi)` are
  argparse types; a float must be finite. `SEED` is a whole number in [0, 2**32).
  Every numeric argument of every verb uses one of them (tests/test_guards.py checks).
- output paths: `check_out_dir` / `check_out_file` refuse a path that is a file, lies
  under a file, is no regular file (a pipe), or cannot be created, before any work. An
  output file is also checked for what it holds: an existing file is replaced only when
  it is an `OutKind` the verb writes (a metasim PNG, HTML page, stamped JSON ...), so a
  user's own file named by mistake is refused, never overwritten. Every user-named output
  file goes through `check_out_file` (or the argparse type `out_file(kind)`).
- writing output files: `replacing` / `write_atomic`, the one way metasim writes a results
  file (a run folder's, a prebuilt's, a report): a new file beside the target renamed
  over it, never written through a symlink (tests/test_atomic_writes.py checks).
- inputs: `check_size` refuses a file over a byte limit unread; `image_size` reads an
  image's header and refuses one whose decoded size is over METASIM_MAX_PIXELS before
  decoding; `load_npy` reads a .npy header (dtype, shape) before loading; `load_json`
  refuses a file over METASIM_JSON_MAX_BYTES or nested deeper than METASIM_YAML_MAX_DEPTH.
Each limit is an environment variable with a default (see LIMITS), read by `limit`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from metasim.errors import MetasimInputError
from metasim.yamlio import LIMITS, limit

__all__ = ["limit"]  # re-exported: every bound is read through it

LIMITS.update(
    {
        "METASIM_MAX_PIXELS": 100_000_000,  # one decoded image (width × height)
        "METASIM_NPY_MAX_BYTES": 1 << 30,  # one decoded .npy array
        "METASIM_JSON_MAX_BYTES": 64 << 20,  # one JSON file read whole
        "METASIM_INPUT_MAX_BYTES": 2 << 30,  # one input file read whole (image, video frame)
        "METASIM_CSV_MAX_BYTES": 256 << 20,  # one CSV table read whole (correlate)
        "METASIM_PARQUET_MAX_BYTES": 1 << 30,  # one episodes.parquet read whole (report)
    }
)

SEED_MAX = 2**32 - 1  # numpy's and the reference simulator's seeds are 32-bit


def bounded_int(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: a whole number in [lo, hi]; anything else is a usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected a whole number in [{lo}, {hi}], got {text}")
        return value

    parse.bounds = (lo, hi)  # type: ignore[attr-defined]
    parse.__name__ = f"int[{lo},{hi}]"
    return parse


def bounded_float(lo: float, hi: float, open_lo: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number in [lo, hi] (in (lo, hi] when `open_lo`)."""
    low = f"> {lo:g}" if open_lo else f">= {lo:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        below = value <= lo if open_lo else value < lo
        if not math.isfinite(value) or below or value > hi:
            raise argparse.ArgumentTypeError(f"expected a number {low} and <= {hi:g}, got {text}")
        return value

    parse.bounds = (lo, hi)  # type: ignore[attr-defined]
    parse.__name__ = f"float {low} and <= {hi:g}"
    return parse


SEED = bounded_int(0, SEED_MAX)


def out_problem(path: Path, want_dir: bool) -> str | None:
    """Why `path` cannot be written as an output folder (`want_dir`) or file, or None:
    a file at or above a folder, a folder (or pipe, device, socket) where a file goes,
    or no write permission in the nearest folder that exists. Nothing is created."""
    if not want_dir and path.is_dir():
        return f"{path} is a folder; expected a file name"
    if not want_dir and os.path.exists(path) and not os.path.isfile(path):  # never raise
        return f"{path} is not a regular file (a named pipe, a device); expected a file name"
    start = path if want_dir else path.parent
    for p in [start, *start.parents]:
        try:
            if p.is_file():
                return f"{p} is a file, not a folder"
            if p.is_dir():
                target = path if path.exists() else p
                return None if os.access(target, os.W_OK) else f"cannot write in {target}"
        except OSError as exc:  # a name too long, a loop of links
            return f"not a usable path ({exc.strerror or exc})"
    return None


@dataclass(frozen=True)
class OutKind:
    """What a verb writes to a user-named file: `what` names it in a refusal, and
    `holds(head)` says whether an existing file, from its first bytes, is one that
    metasim wrote, so replacing it loses nothing the user made."""

    what: str
    holds: Callable[[bytes], bool]


HEAD_BYTES = 1 << 20  # how much of an existing output file `holds` sees


def starts_with(prefix: bytes | tuple[bytes, ...], *contains: bytes) -> Callable[[bytes], bool]:
    """A `holds` test: the file starts with `prefix` (or one of them) and its head holds
    each of `contains`."""
    return lambda head: head.startswith(prefix) and all(c in head for c in contains)


def stamped_json(stamp: str, *older: str) -> Callable[[bytes], bool]:
    """A `holds` test for a JSON object metasim writes with `"written_by": stamp` as its
    first key (`stamp_json`), or one of the `older` stamps the same kind of file had."""
    return starts_with(tuple(json.dumps({"written_by": s})[:-1].encode() for s in (stamp, *older)))


def stamp_json(stamp: str, data: dict[str, Any]) -> str:
    """`data` as JSON text with `"written_by": stamp` first, as `stamped_json` expects."""
    return json.dumps({"written_by": stamp, **data})


PNG_SOFTWARE = "metasim"  # the tEXt "Software" value of every PNG metasim writes
PNG = OutKind("a PNG written by metasim", starts_with(b"\x89PNG\r\n\x1a\n", b"Software\x00metasim"))
# `bench physics --profile`: a cProfile dump (a marshalled dict) of metasim's eval loop,
# and the text of its top entries next to it.
PSTATS = OutKind("a cProfile of metasim's eval loop", starts_with((b"{", b"\xfb"), b"_eval_loop"))
PROFILE_TEXT = OutKind(
    "a profile text written by metasim", starts_with(b"# ", b" control steps of ")
)


def save_png(path: Path, image: np.ndarray) -> None:
    """Write `image` (H, W, 3) uint8 as a PNG stamped as metasim's (see `PNG`)."""
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Software", PNG_SOFTWARE)
    Image.fromarray(image).save(path, pnginfo=info)


def held_problem(path: Path, kind: OutKind) -> str | None:
    """Why the existing file `path` must not be replaced by `kind`, or None: it is
    missing, empty, or already one of `kind`."""
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return None
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError as exc:
        return f"cannot read what it holds ({exc.strerror or exc})"
    if kind.holds(head):
        return None
    return (
        f"{path} exists and is not {kind.what}; it would be overwritten (remove it first "
        "if it is meant to be replaced)"
    )


def out_file(kind: OutKind) -> Callable[[str], Path]:
    """An argparse type: an output file of `kind` (see `check_out_file`)."""

    def parse(text: str) -> Path:
        if not text.strip():
            raise argparse.ArgumentTypeError("expected a path, got an empty string")
        path = Path(text)
        why = out_problem(path, want_dir=False) or held_problem(path, kind)
        if why is not None:
            raise argparse.ArgumentTypeError(why)
        return path

    parse.__name__ = "output file"
    parse.output = True  # type: ignore[attr-defined]
    parse.kind = kind  # type: ignore[attr-defined]
    return parse


def _out_dir_type(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    why = out_problem(Path(text), want_dir=True)
    if why is not None:
        raise argparse.ArgumentTypeError(why)
    return Path(text)


_out_dir_type.__name__ = "output folder"
_out_dir_type.output = True  # type: ignore[attr-defined]
OUT_DIR = _out_dir_type  # argparse type: a folder the verb will create or fill


def check_out_dir(path: str | Path, what: str) -> Path:
    """Create the output folder `path` (named `what`, e.g. "--out"); a file there or
    above it, or a folder that cannot be made, is an input error (exit 2)."""
    out = Path(path)
    why = out_problem(out, want_dir=True)
    if why is None:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            why = f"cannot create the folder ({exc.strerror or exc})"
    if why is not None:
        raise MetasimInputError(f"{what} {out}", [why], f"Choose another {what}")
    return out


def check_out_file(path: str | Path, what: str, kind: OutKind) -> Path:
    """An output file `path` of `kind` that can be written, its parent folder made; see
    `out_problem` for the paths refused, and `held_problem` for the existing files that
    are not replaced (an input error, exit 2). Call it before any work."""
    out = Path(path)
    why = out_problem(out, want_dir=False) or held_problem(out, kind)
    if why is not None:
        raise MetasimInputError(f"{what} {out}", [why], f"Choose another {what}")
    check_out_dir(out.parent, what)
    return out


@contextmanager
def replacing(target: Path) -> Iterator[Path]:
    """Write the output file `target` whole or not at all: yields the path of a new,
    empty temporary file in `target`'s folder (created exclusively, so never a link to
    elsewhere) for the caller to write by name; when the block ends without an
    exception it is renamed over `target` (`os.replace`: atomic, and a symlink at
    `target` is replaced by the file, never followed), else it is removed and `target`
    is as it was. Every results file metasim writes goes through here."""
    target = Path(target)
    tmp = target.with_name(f".{target.name[:200]}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(target: Path, data: str | bytes) -> None:
    """Write `data` (text as UTF-8) to the output file `target` through `replacing`; a
    failure (a folder in the way, no space, no permission) is an input error naming the
    file (exit 2), and `target` is left as it was."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        with replacing(target) as tmp:
            tmp.write_bytes(raw)
    except OSError as exc:
        raise MetasimInputError(
            str(target), [f"cannot write {Path(target).name} ({exc.strerror or exc})"]
        ) from None


def check_size(path: Path, max_bytes: int, env: str) -> int:
    """The size of `path` in bytes; over `max_bytes` (set by `env`) is an input error."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise MetasimInputError(str(path), [f"cannot read it ({exc.strerror or exc})"]) from None
    if size > max_bytes:
        raise MetasimInputError(
            str(path),
            [f"{size} bytes, over the limit of {max_bytes} bytes ({env})"],
            f"Raise it with {env}=<bytes> if the file is meant to be this large",
        )
    return size


def image_size(path: Path) -> tuple[int, int]:
    """(width, height) from the image's header, read without decoding the pixels; an
    unreadable header or more than METASIM_MAX_PIXELS pixels is an input error."""
    from PIL import Image

    check_size(path, limit("METASIM_INPUT_MAX_BYTES"), "METASIM_INPUT_MAX_BYTES")
    bomb_limit, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None  # ours applies below
    try:
        with Image.open(path) as img:  # reads the header only
            width, height = img.size
    except (OSError, ValueError) as exc:
        raise MetasimInputError(str(path), [f"not a readable image ({exc})"]) from None
    finally:
        Image.MAX_IMAGE_PIXELS = bomb_limit
    max_pixels = limit("METASIM_MAX_PIXELS")
    if width * height > max_pixels:
        raise MetasimInputError(
            str(path),
            [f"the header says {width}×{height} pixels, over the limit of {max_pixels}"],
            "Raise it with METASIM_MAX_PIXELS=<pixels> if the image is meant to be this large",
        )
    return width, height


def load_npy(path: Path, what: str = "array") -> np.ndarray:
    """A numeric .npy array, its header (dtype, shape) checked before the data is read:
    not numeric, object arrays or over METASIM_NPY_MAX_BYTES decoded is an input error."""
    max_bytes = limit("METASIM_NPY_MAX_BYTES")
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            shape, _, dtype = np.lib.format._read_array_header(f, version)  # type: ignore[attr-defined]
    except (OSError, ValueError) as exc:
        raise MetasimInputError(str(path), [f"not a readable .npy {what} ({exc})"]) from None
    if dtype.kind not in "biuf":
        raise MetasimInputError(str(path), [f"expected a numeric {what}, got dtype {dtype}"])
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > max_bytes:
        raise MetasimInputError(
            str(path),
            [f"shape {shape} is {nbytes} bytes decoded, over the limit of {max_bytes}"],
            "Raise it with METASIM_NPY_MAX_BYTES=<bytes> if the array is meant to be this large",
        )
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise MetasimInputError(str(path), [f"not a readable .npy {what} ({exc})"]) from None


def _depth(value: Any, max_depth: int) -> int:
    """Nesting depth of parsed JSON, iteratively (a deep file cannot overflow the stack)."""
    stack, deepest = [(value, 1)], 0
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > max_depth:
            break
        children = node.values() if isinstance(node, dict) else node
        if isinstance(node, dict | list):
            stack.extend((c, d + 1) for c in children if isinstance(c, dict | list))
    return deepest


def load_json(path: Path, what: str = "JSON file") -> Any:
    """Parse a JSON file; over METASIM_JSON_MAX_BYTES, nested deeper than
    METASIM_YAML_MAX_DEPTH, or not JSON is an input error naming the file."""
    check_size(path, limit("METASIM_JSON_MAX_BYTES"), "METASIM_JSON_MAX_BYTES")
    max_depth = limit("METASIM_YAML_MAX_DEPTH")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        data = None
        depth = max_depth + 1
    except json.JSONDecodeError as exc:
        raise MetasimInputError(
            str(path), [f"line {exc.lineno}: not valid JSON ({exc.msg})"]
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise MetasimInputError(str(path), [f"cannot be read as a {what} ({exc})"]) from None
    else:
        depth = _depth(data, max_depth)
    if depth > max_depth:
        raise MetasimInputError(
            str(path),
            [f"nested more than {max_depth} levels deep"],
            "Raise the limit with METASIM_YAML_MAX_DEPTH=<levels>",
        )
    return data


# Shared bounds of the benches' and evals' sizes: memory grows with envs × steps.
NUM_ENVS = bounded_int(1, 4096)
PIXELS = bounded_int(1, 4096)  # an image's width or height
STEPS = bounded_int(1, 10_000)
THREADS = bounded_int(1, 256)
REPEATS = bounded_int(1, 100)

LIMITS["METASIM_MAX_ENV_STEPS"] = 500_000  # envs × control steps a bench keeps in memory
LIMITS["METASIM_CORRELATE_MAX_CELLS"] = 20_000_000  # bootstrap replicates × study rows


def check_budget(what: str, amount: int, env: str) -> None:
    """Refuse work whose memory grows with `amount` (e.g. envs × steps) over the limit
    `env` (an input error, exit 2) instead of allocating gigabytes."""
    cap = limit(env)
    if amount > cap:
        raise MetasimInputError(
            "command line",
            [f"{what} is {amount}, over the limit of {cap} ({env})"],
            f"Ask for less, or raise it with {env}=<n> if this machine has the memory",
        )
