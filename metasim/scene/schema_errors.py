"""Scene validation errors as one line each: `line 12, objects[0].mass: expected a
number > 0, got -1`, with pydantic's noise (union tags, validator names) removed and
typos answered with the closest allowed key."""

from __future__ import annotations

import datetime
import difflib
import re
import types
import typing
from typing import Any

from pydantic import BaseModel

from metasim.scene.kinds import PREDICATE_KINDS, KindUnion
from metasim.scene.schema import Scene
from metasim.yamlio import Loc
from metasim.yamlio import at as _at
from metasim.yamlio import dotted as _dotted
from metasim.yamlio import line_of as _line_of
from metasim.yamlio import line_prefix as _line_prefix
from metasim.yamlio import node_at as _node
from metasim.yamlio import walk as _walk

# ---------------------------------------------------------------- formatting


def kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {short(value)}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    return f"a {type(value).__name__}"


def _clean_loc(loc: Loc, data: Any) -> Loc:
    """Remove what pydantic puts in a location that is not a data key: union tags
    (a fixture's 'table', a predicate's kind, which pydantic repeats before the key)
    and function-validator names."""
    out: list[int | str] = []
    node = data
    for i, part in enumerate(loc):
        nxt = loc[i + 1] if i + 1 < len(loc) else None
        if isinstance(part, str):
            if part.startswith("function-"):
                continue
            if part in PREDICATE_KINDS and nxt == part:
                continue  # the predicate tag; the key itself comes next
            if (
                isinstance(node, dict)
                and node.get("type") == part
                and (part not in node or nxt == part)
            ):
                continue  # the fixture tag
        out.append(part)
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    return tuple(out)


_EXPECT = {
    "greater_than": "expected a number > {gt}",
    "greater_than_equal": "expected a number >= {ge}",
    "less_than": "expected a number < {lt}",
    "less_than_equal": "expected a number <= {le}",
    "finite_number": "expected a finite number",
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

# Model-level checks name the model; point at the field that holds the problem instead.
_FOCUS_BY_KIND = {"shape_size": "size", "color": "material"}


def describe_all(errors: list[Any], data: Any) -> list[str]:
    """One line per problem, in file order, with the noise of unions and tuples removed."""
    cleaned = [(err, _clean_loc(err["loc"], data)) for err in errors]
    typos = _typo_fixes(cleaned, data)
    lines: list[tuple[int, str]] = []
    seen: set[str] = set()
    short_tuples: dict[Loc, int] = {}
    for err, loc in cleaned:
        if err["type"] == "missing" and loc and isinstance(loc[-1], int):
            parent = loc[:-1]
            if isinstance(_node(data, parent), list):
                short_tuples[parent] = max(short_tuples.get(parent, 0), loc[-1] + 1)
    for err, loc in cleaned:
        if err["type"] == "missing" and loc in typos:
            continue
        if err["type"] == "missing" and loc[:-1] in short_tuples:
            parent = loc[:-1]
            want = short_tuples.pop(parent, None)
            if want is None:
                continue
            got = _node(data, parent)
            text = (
                f"{_line_prefix(data, parent)}{_dotted(parent)}: expected {want} values, "
                f"got {len(got)}: {short(got)}"
            )
            line_loc = parent
        else:
            line_loc, text = _describe(err, loc, data)
        if text not in seen:
            seen.add(text)
            lines.append((_line_of(data, _walk(data, line_loc)[0]) or 0, text))
    return [text for _, text in sorted(lines, key=lambda x: x[0])]


def _typo_fixes(cleaned: list[tuple[Any, Loc]], data: Any) -> set[Loc]:
    """Missing required keys that an unknown key beside them is a misspelling of: the
    'unknown key ... (did you mean ...)' line says it all."""
    missing = {loc for err, loc in cleaned if err["type"] == "missing" and loc}
    fixed: set[Loc] = set()
    for err, loc in cleaned:
        if err["type"] != "extra_forbidden" or not loc:
            continue
        siblings = [str(m[-1]) for m in missing if m[:-1] == loc[:-1]]
        for close in difflib.get_close_matches(str(loc[-1]), siblings, n=1):
            fixed.add((*loc[:-1], close))
    return fixed


def _describe(err: Any, loc: Loc, data: Any) -> tuple[Loc, str]:
    """(location whose line to show, message) for one pydantic error at cleaned `loc`."""
    real, node = _walk(data, loc)
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden":
        key = loc[-1]
        allowed = _allowed_keys(real[:-1] if real and real[-1] == key else real, data)
        hint = ""
        if allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            hint += f"; allowed keys: {', '.join(allowed)}"
        return real, f"{_at(data, real)}: unknown key {key!r}{hint}"
    if kind == "missing":
        return loc, f"{_at(data, loc)}: required field is missing"
    if kind == "duplicate_name":
        return _duplicate(loc, ctx.get("name"), data)
    if kind == "predicate":
        return real, f"{_at(data, real)}: {_predicate_problem(node)}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        key = str(ctx.get("discriminator", "type")).strip("'\"")
        at = (*real, key)
        expected = str(ctx.get("expected_tags") or _tags_of(real, data))
        if kind == "union_tag_not_found":
            what = f"required field is missing; expected one of {expected}"
        else:
            tag = ctx.get("tag")
            what = (
                f"unknown {key} {tag!r}{_did_you_mean(tag, expected)}; expected one of {expected}"
            )
        return at, f"{_at(data, at)}: {what}"
    if kind in ("literal_error", "enum"):
        expected = str(ctx.get("expected", ""))
        got = err.get("input")
        what = f"expected {expected}, got {short(got)}{_did_you_mean(got, expected)}"
        return real, f"{_at(data, real)}: {what}"
    if kind == "too_long" and ctx.get("field_type") == "Tuple":
        got = err.get("input", node)
        what = f"expected {ctx.get('max_length')} values, got {len(got)}: {short(got)}"
        return real, f"{_at(data, real)}: {what}"
    template = _EXPECT.get(kind)
    if template:
        try:
            what = template.format(**{k: _num(v) for k, v in ctx.items()})
        except (KeyError, IndexError, ValueError):
            what = err["msg"]
        got = err.get("input", node)
        return real, f"{_at(data, real)}: {what}, got {short(got)}"
    at = _focus(kind, err["msg"], real, node)
    return at, f"{_at(data, at)}: {err['msg']}"


def _focus(kind: str, msg: str, real: Loc, node: Any) -> Loc:
    """For a model-level check, the field of that model the problem is about."""
    if not isinstance(node, dict):
        return real
    key: str | None = _FOCUS_BY_KIND.get(kind)
    if kind == "shape_file":
        key = node.get("shape") if node.get("shape") in ("mesh", "mjcf") else None
    elif kind == "camera_pose":
        if "'pos'" in msg and "look_at" not in msg:
            key = "pos"
        else:
            key = "quat" if "quat" in node else "look_at"
    elif kind == "range_order":
        key = "yaw_low" if msg.startswith("yaw") else "pos_low"
    elif kind == "texture_source" and "file" in node:
        key = "file"
    return (*real, key) if key else real


def _duplicate(loc: Loc, name: Any, data: Any) -> tuple[Loc, str]:
    items = _node(data, loc)
    where = [
        i for i, it in enumerate(items or []) if isinstance(it, dict) and it.get("name") == name
    ]
    if len(where) >= 2:
        at: Loc = (*loc, where[1], "name")
        first = _dotted((*loc, where[0]))
        text = f"the name {name!r} is used twice (also by {first}); names must be unique"
        return at, f"{_at(data, at)}: {text}"
    return loc, f"{_at(data, loc)}: the name {name!r} is used twice"


def _predicate_problem(node: Any) -> str:
    kinds = ", ".join(name for name, _ in PREDICATE_KINDS.in_order())
    if not isinstance(node, dict):
        return f"expected a predicate (a mapping with one key, one of: {kinds}), got {short(node)}"
    keys = [str(k) for k in node]
    if not keys:
        return f"an empty predicate; give one key, one of: {kinds}"
    if len(keys) > 1:
        return (
            f"a predicate has exactly one key, got {len(keys)} ({', '.join(keys)}); "
            "combine predicates with 'all: [...]' or 'any: [...]'"
        )
    return f"unknown predicate {keys[0]!r}{_did_you_mean(keys[0], kinds)}; expected one of: {kinds}"


def _did_you_mean(got: Any, expected: str) -> str:
    if not isinstance(got, str):
        return ""
    options = re.findall(r"'([^']*)'", expected) or [s.strip() for s in expected.split(",")]
    close = difflib.get_close_matches(got, options, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _tags_of(loc: Loc, data: Any) -> str:
    """The 'type' values the union at `loc` accepts (for a fixture without 'type')."""
    tp = _type_at(loc, data)
    tags: list[str] = []
    for member in (
        typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else ()
    ):
        field = getattr(member, "model_fields", {}).get("type")
        if field is not None:
            tags.extend(repr(a) for a in typing.get_args(field.annotation))
    return ", ".join(tags) or "(see `metasim scene schema`)"


def _num(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def short(value: Any) -> str:
    if isinstance(value, datetime.date):
        return f"the date {value.isoformat()} (quote it to make it text)"
    if isinstance(value, dict):
        value = dict(value)
    elif isinstance(value, list):
        value = list(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _allowed_keys(loc: Loc, data: Any) -> list[str]:
    """The field names of the model found at `loc` (walking the schema with the data)."""
    tp = _resolve(_type_at(loc, data), _node(data, loc))
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [f.alias or name for name, f in tp.model_fields.items()]
    return []


def _type_at(loc: Loc, data: Any) -> Any:
    """The schema type at `loc` (unions left unresolved at the last step)."""
    tp: Any = Scene
    node = data
    for part in loc:
        tp = _resolve(tp, node)
        if isinstance(part, int):
            tp = _item_type(tp)
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            continue
        if not (isinstance(tp, type) and issubclass(tp, BaseModel)):
            return Any
        field = tp.model_fields.get(part) or tp.model_fields.get(f"{part}_")
        if field is None:
            return Any
        tp = _kind_union(field.metadata) or field.annotation
        node = node.get(part) if isinstance(node, dict) else None
    while typing.get_origin(tp) is typing.Annotated:
        args = typing.get_args(tp)
        tp = _kind_union(args[1:]) or args[0]
    return tp


def _kind_union(metadata: typing.Iterable[Any]) -> Any:
    """The union of registered kinds a field's metadata stands for (None: not a union)."""
    marker = next((m for m in metadata if isinstance(m, KindUnion)), None)
    return None if marker is None else marker.union()


def _resolve(tp: Any, node: Any) -> Any:
    """Strip Annotated/Optional; pick the union member that matches the data."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            args = typing.get_args(tp)
            tp = _kind_union(args[1:]) or args[0]
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
