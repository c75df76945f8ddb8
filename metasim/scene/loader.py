"""Load scene YAML into the typed `Scene`, with errors that name file, line and field.

Every problem becomes one line: `line 12, objects[0].mass: expected a number > 0, got -1`.
Syntax errors, schema errors and reference errors (a predicate naming a missing object,
a mesh file that does not exist, an unknown robot) are all reported this way, as a
`MetasimInputError` that the CLI prints and exits 2 on.
"""

from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from metasim.errors import MetasimInputError
from metasim.scene.references import check_references
from metasim.scene.schema import Scene

Loc = tuple[int | str, ...]


def load_yaml(path: Path) -> Any:
    """Parse YAML keeping line numbers (ruamel round-trip nodes)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise MetasimInputError(str(path), ["no such file"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MetasimInputError(str(path), [f"cannot be read ({exc})"]) from None
    try:
        return YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = exc.problem or exc.context or "malformed YAML"
        raise MetasimInputError(str(path), [f"{where}YAML syntax error: {what}"]) from None
    except YAMLError as exc:
        raise MetasimInputError(str(path), [f"YAML syntax error: {exc}"]) from None


def load_scene(path: str | Path) -> Scene:
    """Read, validate and reference-check one scene file."""
    path = Path(path)
    data = load_yaml(path)
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        raise MetasimInputError(str(path), [f"expected a mapping of scene fields, got {got}"])
    try:
        scene = Scene.model_validate(data)
    except ValidationError as exc:
        problems = [_describe(err, data) for err in _dedupe(exc.errors())]
        raise MetasimInputError(str(path), problems) from None
    issues = check_references(scene, path.parent)
    if issues:
        raise MetasimInputError(
            str(path), [f"{_line_prefix(data, loc)}{_dotted(loc)}: {msg}" for loc, msg in issues]
        )
    return scene


# ---------------------------------------------------------------- formatting


def _dedupe(errors: list[Any]) -> list[Any]:
    """Drop the union members' noise: keep the deepest error per location prefix."""
    out: list[Any] = []
    for err in errors:
        loc = _clean_loc(err["loc"])
        if any(_clean_loc(o["loc"]) == loc and o["msg"] == err["msg"] for o in out):
            continue
        out.append(err)
    return out


def _clean_loc(loc: Loc) -> Loc:
    """Remove pydantic's union tags (e.g. 'table', 'lifted') that are not data keys."""
    return tuple(p for p in loc if not (isinstance(p, str) and p.startswith("function-")))


def _dotted(loc: Loc) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "(top level)"


def _walk(data: Any, loc: Loc) -> tuple[Loc, Any]:
    """Follow `loc` through the YAML data; return the part of loc that is real and the node."""
    real: list[int | str] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
            real.append(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            real.append(part)
        elif isinstance(node, dict) and part == "not_" and "not" in node:
            node = node["not"]
            real.append("not")
        else:
            continue
    return tuple(real), node


def _line_of(data: Any, loc: Loc) -> int | None:
    """1-based line of the node at `loc` (or of its nearest ancestor)."""
    parent: Any = None
    node = data
    line: int | None = None
    for part in loc:
        parent, node = node, None
        if isinstance(parent, CommentedMap) and part in parent:
            pos = parent.lc.key(part)
            line = pos[0] + 1 if pos else line
            node = parent[part]
        elif isinstance(parent, CommentedSeq) and isinstance(part, int) and part < len(parent):
            pos = parent.lc.item(part)
            line = pos[0] + 1 if pos else line
            node = parent[part]
        else:
            break
    return line


def _line_prefix(data: Any, loc: Loc) -> str:
    real, _ = _walk(data, loc)
    line = _line_of(data, real)
    return f"line {line}, " if line else ""


_EXPECT = {
    "greater_than": "expected a number > {gt}",
    "greater_than_equal": "expected a number >= {ge}",
    "less_than": "expected a number < {lt}",
    "less_than_equal": "expected a number <= {le}",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "string_type": "expected a string",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "too_short": "expected at least {min_length} item(s)",
    "too_long": "expected at most {max_length} item(s)",
    "string_too_short": "expected a non-empty string",
    "string_pattern_mismatch": "expected a name of letters, digits, '_' or '-'",
}


def _describe(err: Any, data: Any) -> str:
    loc = _clean_loc(err["loc"])
    real, node = _walk(data, loc)
    kind = err["type"]
    where = _line_prefix(data, loc)
    if kind == "extra_forbidden":
        key = loc[-1]
        allowed = _allowed_keys(real[:-1] if real and real[-1] == key else real, data)
        hint = ""
        if allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            hint += f"; allowed keys: {', '.join(allowed)}"
        return f"{where}{_dotted(real)}: unknown key {key!r}{hint}"
    if kind == "missing":
        return f"{where}{_dotted(loc)}: required field is missing"
    if kind in ("literal_error", "enum"):
        return f"{where}{_dotted(real)}: expected {err['ctx']['expected']}, got {err['input']!r}"
    if kind == "union_tag_invalid":
        ctx = err.get("ctx", {})
        return (
            f"{where}{_dotted(real)}: unknown {ctx.get('discriminator', 'kind')} "
            f"{ctx.get('tag')!r}; expected one of {ctx.get('expected_tags')}"
        )
    template = _EXPECT.get(kind)
    ctx = err.get("ctx") or {}
    if template:
        try:
            what = template.format(**ctx)
        except KeyError:
            what = err["msg"]
        got = err.get("input", node)
        return f"{where}{_dotted(real)}: {what}, got {_short(got)}"
    return f"{where}{_dotted(real)}: {err['msg']}"


def _short(value: Any) -> str:
    text = repr(dict(value) if isinstance(value, dict) else value)
    return text if len(text) <= 60 else text[:57] + "..."


def _allowed_keys(loc: Loc, data: Any) -> list[str]:
    """The field names of the model found at `loc` (walking the schema with the data)."""
    tp: Any = Scene
    node = data
    for part in loc:
        tp = _resolve(tp, node)
        if isinstance(part, int):
            tp = _item_type(tp)
            node = node[part] if isinstance(node, list) and part < len(node) else None
            continue
        if not (isinstance(tp, type) and issubclass(tp, BaseModel)):
            return []
        field = tp.model_fields.get(part) or tp.model_fields.get(f"{part}_")
        if field is None:
            return []
        tp = field.annotation
        node = node.get(part) if isinstance(node, dict) else None
    tp = _resolve(tp, node)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [f.alias or name for name, f in tp.model_fields.items()]
    return []


def _resolve(tp: Any, node: Any) -> Any:
    """Strip Annotated/Optional; pick the union member that matches the data."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = _pick_member(members, node)
            continue
        return tp


def _pick_member(members: list[Any], node: Any) -> Any:
    if len(members) == 1:
        return members[0]
    stripped = [_resolve(m, node) for m in members]
    if isinstance(node, dict):
        for m in stripped:
            if not (isinstance(m, type) and issubclass(m, BaseModel)):
                continue
            fields = m.model_fields
            type_field = fields.get("type")
            if type_field is not None and node.get("type") in typing.get_args(
                type_field.annotation
            ):
                return m
            if len(fields) == 1 and (
                next(iter(fields)) in node or (fields.get("not_") and "not" in node)
            ):
                return m
    return stripped[0]


def _item_type(tp: Any) -> Any:
    args = typing.get_args(tp)
    return args[0] if args else Any
