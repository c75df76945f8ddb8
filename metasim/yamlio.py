"""Every YAML file metasim reads (scenes, suites, perturbation grids, policy configs,
robot descriptors) goes through `load_yaml`: bounded, with errors that name the file,
the line and the field.

Bounds, checked before anything walks the data (each an input error, exit 2):
- size: files over METASIM_YAML_MAX_BYTES (default 1 MiB) are refused unread;
- aliases: `*alias` references may expand the document to at most
  METASIM_YAML_MAX_NODES nodes (default 100000; a "billion laughs" file is refused
  while it is parsed, not after the expansion);
- nesting: at most METASIM_YAML_MAX_DEPTH levels (default 64).

`validate_yaml(Model, data, path)` validates parsed data into a pydantic model and
reports each problem as `line N, a.b[0].c: what is wrong`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    NodeEvent,
    ScalarEvent,
)

from metasim.errors import MetasimInputError, one_line

Loc = tuple[int | str, ...]
M = TypeVar("M", bound=BaseModel)

LIMITS = {  # env var -> default
    "METASIM_YAML_MAX_BYTES": 1 << 20,
    "METASIM_YAML_MAX_NODES": 100_000,
    "METASIM_YAML_MAX_DEPTH": 64,
}


def limit(name: str) -> int:
    """The bound `name` (an env var of LIMITS), as set in the environment or its default."""
    raw = os.environ.get(name)
    if raw is None:
        return LIMITS[name]
    try:
        value = int(raw)
    except ValueError:
        raise MetasimInputError(name, [f"expected a whole number, got {raw!r}"]) from None
    if value < 1:
        raise MetasimInputError(name, [f"expected a whole number >= 1, got {raw!r}"])
    return value


def load_yaml(path: Path, what: str = "YAML file") -> Any:
    """Parse YAML keeping line numbers (ruamel round-trip nodes), within the bounds."""
    text = _read(path, what)
    try:
        _check_flow_depth(text, path)
        _check_expansion(text, path)
        return YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        msg = one_line(exc.problem or exc.context or "malformed YAML")
        if "'\\t'" in msg:
            msg += " (a tab; YAML indents with spaces only)"
        raise MetasimInputError(str(path), [f"{where}YAML syntax error: {msg}"]) from None
    except YAMLError as exc:
        raise MetasimInputError(str(path), [f"YAML syntax error: {one_line(str(exc))}"]) from None
    except RecursionError:
        raise MetasimInputError(
            str(path), ["YAML syntax error: the data is nested too deeply"]
        ) from None


def _read(path: Path, what: str) -> str:
    max_bytes = limit("METASIM_YAML_MAX_BYTES")
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise IsADirectoryError(str(path))
        if size > max_bytes:
            raise MetasimInputError(
                str(path),
                [
                    f"{size} bytes, over the limit of {max_bytes} bytes for a {what}; "
                    "raise it with METASIM_YAML_MAX_BYTES=<bytes> if the file is meant "
                    "to be this large"
                ],
            )
        with path.open("rb") as fh:
            raw = fh.read(max_bytes + 1)  # the file may have grown since stat()
        if len(raw) > max_bytes:
            raise MetasimInputError(
                str(path), [f"over the limit of {max_bytes} bytes (METASIM_YAML_MAX_BYTES)"]
            )
        return raw.decode("utf-8")
    except FileNotFoundError:
        raise MetasimInputError(str(path), ["no such file"]) from None
    except IsADirectoryError:
        raise MetasimInputError(str(path), [f"is a directory, not a {what}"]) from None
    except UnicodeDecodeError as exc:
        line = bytes(exc.object[: exc.start]).count(b"\n") + 1
        bad = bytes(exc.object[exc.start : exc.start + 1])
        raise MetasimInputError(
            str(path), [f"line {line}: not UTF-8 text (byte 0x{bad.hex()}); save the file as UTF-8"]
        ) from None
    except OSError as exc:
        raise MetasimInputError(str(path), [f"cannot be read ({exc.strerror or exc})"]) from None


_FLOW = re.compile(r"[\[\]{}'\"#\n]")


def _depth_error(path: Path, line: int | str, max_depth: int) -> MetasimInputError:
    return MetasimInputError(
        str(path),
        [
            f"line {line}: nested deeper than {max_depth} levels "
            "(raise the limit with METASIM_YAML_MAX_DEPTH=<levels>)"
        ],
    )


def _check_flow_depth(text: str, path: Path) -> None:
    """Flow brackets ([ {) nested past the bound, found by a scan of the text (the YAML
    scanner slows down quadratically on deep flow nesting, before any event)."""
    max_depth = limit("METASIM_YAML_MAX_DEPTH")
    depth, line, quote, comment = 0, 1, "", False
    for m in _FLOW.finditer(text):
        c = m.group()
        if c == "\n":
            line, quote, comment = line + 1, "", False
        elif comment:
            continue
        elif quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#":
            comment = m.start() == 0 or text[m.start() - 1] in " \t\n"
        elif c in "[{":
            depth += 1
            if depth > max_depth:
                raise _depth_error(path, line, max_depth)
        else:
            depth = max(0, depth - 1)


def _check_expansion(text: str, path: Path) -> None:
    """Walk the parse events once: the node count with every alias expanded, and the
    nesting depth, each against its bound (an alias counts the size of its anchor's
    node, so nine anchors of nine aliases each are 9**9 nodes, found in a few events)."""
    max_nodes = limit("METASIM_YAML_MAX_NODES")
    max_depth = limit("METASIM_YAML_MAX_DEPTH")
    sizes: dict[str, int] = {}  # anchor -> expanded node count
    stack: list[tuple[str | None, int]] = [(None, 0)]  # (anchor, nodes so far) per level
    total = 0
    for event in YAML(typ="rt").parse(text):
        if isinstance(event, ScalarEvent | AliasEvent):
            n = sizes.get(event.anchor or "", 1) if isinstance(event, AliasEvent) else 1
            if isinstance(event, ScalarEvent) and event.anchor:
                sizes[event.anchor] = 1
            anchor, count = stack[-1]
            stack[-1] = (anchor, count + n)
            total += n
        elif isinstance(event, CollectionStartEvent):
            stack.append((event.anchor, 1))
            total += 1
            if len(stack) - 1 > max_depth:
                line = event.start_mark.line + 1 if event.start_mark else "?"
                raise _depth_error(path, line, max_depth)
        elif isinstance(event, CollectionEndEvent):
            anchor, count = stack.pop()
            if anchor:
                sizes[anchor] = count
            parent, pcount = stack[-1]
            stack[-1] = (parent, pcount + count)
        if total > max_nodes:
            line = event.start_mark.line + 1 if isinstance(event, NodeEvent) else "?"
            raise MetasimInputError(
                str(path),
                [
                    f"line {line}: aliases (*name) expand the document past {max_nodes} "
                    "values (an alias bomb?); raise the limit with "
                    "METASIM_YAML_MAX_NODES=<values> if the file is meant to be this large"
                ],
            )


def validate_yaml(
    model: type[M], data: Any, path: Path, prefix: str = "", show_input: bool = True
) -> M:
    """`data` (from `load_yaml(path)`) as `model`; each problem on one line with the line
    of the file it is on: `line N, <prefix><field path>: <what is wrong>`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(p for p in err["loc"] if isinstance(p, int | str))
            text = f"{line_prefix(data, loc)}{prefix}{dotted(loc)}: {err['msg']}"
            problems.append(text + (f", got {err.get('input')!r}" if show_input else ""))
        raise MetasimInputError(str(path), problems) from None


# ---------------------------------------------------------------- locations


def dotted(loc: Loc) -> str:
    """`a.b[0].c` of a location."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "(top level)"


def walk(data: Any, loc: Loc) -> tuple[Loc, Any]:
    """Follow `loc` through the YAML data; the part of loc that exists, and its node."""
    real: list[int | str] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif isinstance(node, dict) and part == "not_" and "not" in node:
            node = node["not"]  # a field aliased because `not` is a Python keyword
            part = "not"
        else:
            return tuple(real), node
        real.append(part)
    return tuple(real), node


def node_at(data: Any, loc: Loc) -> Any:
    """The node at `loc`, or None if the data has no such location."""
    real, node = walk(data, loc)
    return node if len(real) == len(loc) else None


def line_of(data: Any, loc: Loc) -> int | None:
    """1-based line of the node at `loc` (or of its nearest ancestor)."""
    node = data
    line: int | None = None
    for part in loc:
        parent, node = node, None
        if isinstance(parent, CommentedMap) and part in parent:
            line = _lc_line(parent.lc.key, part, line)
            node = parent[part]
        elif isinstance(parent, CommentedSeq) and isinstance(part, int) and part < len(parent):
            line = _lc_line(parent.lc.item, part, line)
            node = parent[part]
        else:
            break
    return line


def line_prefix(data: Any, loc: Loc) -> str:
    """`line N, ` of the deepest existing part of `loc` ('' when unknown)."""
    real, _ = walk(data, loc)
    line = line_of(data, real)
    return f"line {line}, " if line else ""


def at(data: Any, loc: Loc) -> str:
    """`line N, a.b[0].c`: where a problem is, for the start of its message."""
    return f"{line_prefix(data, loc)}{dotted(loc)}"


def _lc_line(lookup: Any, part: Any, default: int | None) -> int | None:
    """ruamel's recorded line of a key or item; keys merged in with `<<:` have none."""
    try:
        pos = lookup(part)
    except (KeyError, IndexError, TypeError):
        return default
    return pos[0] + 1 if pos else default


def plain(data: Any) -> Any:
    """ruamel's round-trip containers as plain dicts and lists (for OmegaConf, JSON)."""
    if isinstance(data, dict):
        return {k: plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [plain(v) for v in data]
    for kind in (bool, int, float, str):  # ruamel's scalar subclasses to the base type
        if isinstance(data, kind):
            return kind(data)
    return data
