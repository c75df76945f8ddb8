"""Load scene YAML into the typed `Scene`, with errors that name file, line and field.

Every problem becomes one line: `line 12, objects[0].mass: expected a number > 0, got -1`.
Syntax errors, schema errors and reference errors (a predicate naming a missing object,
a mesh file that does not exist, an unknown robot) are all reported this way, as a
`MetasimInputError` that the CLI prints and exits 2 on.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from metasim.errors import MetasimInputError
from metasim.scene.references import check_references
from metasim.scene.schema import Scene
from metasim.scene.schema_errors import describe_all as _describe_all
from metasim.scene.schema_errors import kind_of as _kind_of
from metasim.scene.schema_errors import short as _short
from metasim.yamlio import Loc
from metasim.yamlio import at as _at
from metasim.yamlio import load_yaml as _load_yaml


def load_yaml(path: Path) -> Any:
    """Parse a scene file (see metasim.yamlio: bounded, errors with line numbers)."""
    return _load_yaml(path, "scene file")


def load_scene(path: str | Path) -> Scene:
    """Read, validate and reference-check one scene file."""
    path = Path(path)
    data = load_yaml(path)
    if not isinstance(data, dict):
        got = "an empty file" if data is None else _kind_of(data)
        raise MetasimInputError(
            str(path),
            [
                "(top level): expected a mapping of scene fields "
                f"(name:, objects:, task:, ...), got {got}"
            ],
        )
    problems = list(_scan(data, data, ()))
    if problems:
        raise MetasimInputError(str(path), problems)
    try:
        scene = Scene.model_validate(data)
    except ValidationError as exc:
        raise MetasimInputError(str(path), _describe_all(exc.errors(), data)) from None
    except RecursionError:
        raise MetasimInputError(str(path), ["(top level): the data is nested too deeply"]) from None
    issues = check_references(scene, path.parent)
    if issues:
        raise MetasimInputError(str(path), [f"{_at(data, loc)}: {msg}" for loc, msg in issues])
    return scene


# ---------------------------------------------------------------- checks before the schema


def _scan(data: Any, node: Any, loc: Loc) -> Iterator[str]:
    """What the schema cannot say well: non-text keys, YAML tags, nan/inf, binary data."""
    tag = getattr(getattr(node, "tag", None), "value", None)
    if tag:
        yield f"{_at(data, loc)}: YAML tag {tag!r} is not supported here; remove it"
        return
    if isinstance(node, dict):
        for key, value in node.items():
            if not isinstance(key, str):
                yield f"{_at(data, loc)}: keys must be names (text), got {_short(key)}"
                continue
            yield from _scan(data, value, (*loc, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _scan(data, value, (*loc, i))
    elif isinstance(node, float) and not math.isfinite(node):
        yield f"{_at(data, loc)}: expected a finite number, got {node}"
    elif isinstance(node, bytes | bytearray):
        yield f"{_at(data, loc)}: binary data (!!binary) is not supported here"
