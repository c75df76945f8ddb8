"""One model-diff engine: two `mjtable.model_arrays` dumps (metasim's compiled model, a
reference's live model) compared element by element, matched by key, each difference with
its benchmark's listed reason or UNLISTED.

What a benchmark brings is facts: how a metasim element name maps to the reference's
(`rename`), which reference names stand for unnamed elements (`anonymous`, e.g. the geom
names robosuite generates), and its listed differences (a table of `Listed` entries, each
with its reason, in a file of its own: LIBERO's is `libero/checks/modeldiff_listed.py`).

Keys: an element's (renamed) name; an unnamed element `<body key>/<kind>[rank]` (its rank
among its body's unnamed elements of that kind), `<kind>#rank` for a kind with no body; a
dof `<joint key>[rank]`. Fields pointing at other elements (`ID_FIELDS`: `geom_bodyid`,
`mat_texid`, ...) are compared as the keys they point at; addresses into flat arrays
(`*adr`) and other layout indexes (fields ending in `id` not in `ID_FIELDS`) depend on
element order, not on the model, and are not compared.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from metasim.reference.mjtable import MODEL_KINDS

RTOL = 1e-6
ATOL = 1e-9
# Fields whose names end in "id" without being ids.
NOT_IDS = {"geom_fluid"}
# Fields that hold element ids: compared as the (reference-side) keys they point at.
ID_FIELDS = {
    "body_parentid": "body", "body_rootid": "body", "body_weldid": "body",
    "jnt_bodyid": "body", "dof_bodyid": "body", "dof_jntid": "jnt", "dof_parentid": "dof",
    "geom_bodyid": "body", "geom_dataid": "mesh", "geom_matid": "mat", "site_bodyid": "body",
    "site_matid": "mat", "cam_bodyid": "body", "cam_targetbodyid": "body",
    "light_bodyid": "body", "light_targetbodyid": "body", "mat_texid": "tex",
    "actuator_trnid": "jnt", "tendon_matid": "mat", "pair_geom1": "geom", "pair_geom2": "geom",
    "eq_obj1id": "body", "eq_obj2id": "body",
}  # fmt: skip
Rename = Callable[[str, str], str]  # (kind, metasim name) -> the reference's name
Anonymous = Callable[[str, str], bool]  # (kind, reference name) -> stands for no name


@dataclass(frozen=True)
class Difference:
    """One field of one element that differs (or an element or field on one side only).
    `metasim`/`reference` are the values as lists (None when absent); `reason` is the
    listed reason, or "" when the difference is not listed; `collision` marks a geom that
    is a collision geom (group 0) in the reference."""

    field: str
    element: str
    metasim: Any
    reference: Any
    reason: str = ""
    collision: bool = False

    @property
    def listed(self) -> bool:
        return bool(self.reason)

    def row(self) -> dict[str, Any]:
        return {"field": self.field, "element": self.element, "metasim": self.metasim,
                "reference": self.reference, "reason": self.reason or "UNLISTED"}  # fmt: skip


@dataclass(frozen=True)
class Listed:
    """A listed difference: fnmatch patterns on the field and on the element's key
    (reference names); with `metasim`/`reference` the values must also be these (None:
    any); with `same_magnitude` the values must be equal up to sign; with `collision` the
    element must be one of the reference's collision geoms."""

    field: str
    element: str
    reason: str
    metasim: Any = None
    reference: Any = None
    same_magnitude: bool = False
    collision: bool = False

    def matches(self, d: Difference) -> bool:
        if not fnmatch.fnmatchcase(d.field, self.field):
            return False
        if not fnmatch.fnmatchcase(d.element, self.element):
            return False
        if self.collision and not d.collision:
            return False
        if self.metasim is not None and d.metasim != self.metasim:
            return False
        if self.reference is not None and d.reference != self.reference:
            return False
        if self.same_magnitude:
            return bool(np.allclose(np.abs(d.metasim), np.abs(d.reference), rtol=RTOL))
        return True


def reason_for(d: Difference, listed: tuple[Listed, ...], notes: Mapping[str, str]) -> str:
    """The reason of the first entry of `listed` matching `d` ("" when none does); a
    reason that is a key of `notes` stands for that note (one text shared by entries)."""
    for entry in listed:
        if entry.matches(d):
            return notes.get(entry.reason, entry.reason)
    return ""


def element_keys(
    dump: dict[str, Any], rename: Rename | None = None, anonymous: Anonymous | None = None
) -> dict[str, list[str]]:
    """kind -> one key per element of a `model_arrays` dump (the module doc). `rename`
    maps metasim names to the reference's; a name for which `anonymous(kind, name)` is
    true counts as unnamed."""
    arrays, keys = dump["arrays"], {}
    for kind, names in dump["names"].items():
        named = [rename(kind, n) if rename and n else n for n in names]
        if anonymous is not None:
            named = ["" if n and anonymous(kind, n) else n for n in named]
        keys[kind] = named
    for kind in keys:
        parent = arrays.get(f"{kind}_bodyid")
        seen: dict[str, int] = {}
        for i, name in enumerate(keys[kind]):
            if name:
                continue
            base = f"{keys['body'][int(parent[i])]}/{kind}" if parent is not None else kind
            rank = seen[base] = seen.get(base, -1) + 1
            keys[kind][i] = f"{base}[{rank}]" if parent is not None else f"{base}#{rank}"
    joints = arrays["dof_jntid"]
    keys["dof"] = []
    for d, j in enumerate(joints):
        first = int(np.flatnonzero(joints == j)[0])
        keys["dof"].append(f"{keys['jnt'][int(j)]}[{d - first}]")
    return keys


def _skip_reason(field_name: str) -> str:
    """Why a per-element field is not compared ("" when it is)."""
    if field_name in ID_FIELDS or "@" in field_name:
        return ""
    if field_name.endswith("adr"):
        return "address into a flat array (depends on element order)"
    if field_name in NOT_IDS:
        return ""
    if field_name.endswith("id") or field_name.endswith("_signature"):
        return "index of other elements not named by this field (element order)"
    return ""


def _values(
    dump: dict[str, Any], keys: dict[str, list[str]], field_name: str
) -> dict[str, np.ndarray]:
    """element key -> the field's row (keys pointed at for `ID_FIELDS`, as an object array)."""
    arr = np.asarray(dump["arrays"][field_name])
    if not len(arr):
        return {}
    rows: np.ndarray = arr.reshape(len(arr), -1)
    target = ID_FIELDS.get(field_name)
    if target is not None:
        names = keys.get(target, [])
        rows = np.array(
            [[names[int(v)] if 0 <= v < len(names) else "-" for v in row] for row in rows],
            dtype=object,
        )
    return dict(zip(keys[field_name.split("_", 1)[0]], rows, strict=True))


def _equal(a: np.ndarray, b: np.ndarray, rtol: float = RTOL, atol: float = ATOL) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype == object or b.dtype == object:
        return bool(np.all(a == b))
    return bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _as_list(value: np.ndarray) -> list[Any]:
    return [v if isinstance(v, str) else round(float(v), 9) for v in value.reshape(-1)]


def _element_diffs(ours: dict[str, list[str]], ref: dict[str, list[str]]) -> list[Difference]:
    """Elements keyed twice on one side, and elements on one side only."""
    diffs: list[Difference] = []
    for kind in MODEL_KINDS:
        for side, keys in (("metasim", ours), ("reference", ref)):
            for key in sorted({k for k in keys.get(kind, []) if keys[kind].count(k) > 1}):
                diffs.append(Difference(f"{kind}:duplicate", key, side, side))
        mine, theirs = set(ours.get(kind, [])), set(ref.get(kind, []))
        for key in sorted(mine - theirs):
            diffs.append(Difference(f"{kind}:element", key, "present", None))
        for key in sorted(theirs - mine):
            diffs.append(Difference(f"{kind}:element", key, None, "present"))
    return diffs


def compare(
    ours: dict[str, Any],
    ref: dict[str, Any],
    rename: Rename,
    reason: Callable[[Difference], str],
    anonymous: Anonymous | None = None,
    sides: tuple[str, str] = ("metasim", "reference"),
    tolerance: tuple[float, float] = (RTOL, ATOL),
    scalars: bool = False,
) -> tuple[list[str], int, dict[str, str], list[Difference]]:
    """Compare two `model_arrays` dumps (metasim's, the reference's). Returns the fields
    compared, the number of values compared (an element's row of a field counts once, or
    each of its scalars with `scalars`), the fields not compared (field -> why; a field
    only one side has names that side, `sides`) and the differences, each with
    `reason(difference)`. Values are equal within `tolerance` (rtol, atol)."""
    our_keys = element_keys(ours, rename)
    ref_keys = element_keys(ref, anonymous=anonymous)
    diffs = _element_diffs(our_keys, ref_keys)
    fields, skipped, count = [], {}, 0
    groups = ref["arrays"]["geom_group"]
    collision = {k for k, g in zip(ref_keys["geom"], groups, strict=True) if g == 0}
    for name in sorted(set(ours["arrays"]) | set(ref["arrays"])):
        if name not in ours["arrays"] or name not in ref["arrays"]:
            skipped[name] = f"only in {sides[0] if name in ours['arrays'] else sides[1]}"
            continue
        if why := _skip_reason(name):
            skipped[name] = why
            continue
        fields.append(name)
        a, b = _values(ours, our_keys, name), _values(ref, ref_keys, name)
        for key in sorted(set(a) & set(b)):
            count += a[key].size if scalars else 1
            if not _equal(a[key], b[key], *tolerance):
                hit = name.startswith("geom_") and key in collision
                diffs.append(Difference(name, key, _as_list(a[key]), _as_list(b[key]), "", hit))
    count += compare_structs(
        ours["structs"], ref["structs"], sides, fields, skipped, diffs, tolerance
    )
    return fields, count, skipped, [_with_reason(d, reason) for d in diffs]


def compare_structs(
    ours: dict[str, Any], ref: dict[str, Any], sides: tuple[str, str], fields: list[str],
    skipped: dict[str, str], diffs: list[Difference],
    tolerance: tuple[float, float] = (RTOL, ATOL),
) -> int:  # fmt: skip
    """Compare global struct fields (`<struct>.<field>` -> value, as `model_arrays` dumps
    them): appends to `fields`, `skipped` and `diffs`; returns the number compared."""
    count = 0
    for name in sorted(set(ours) | set(ref)):
        if name not in ours or name not in ref:
            skipped[name] = f"only in {sides[0] if name in ours else sides[1]}"
            continue
        fields.append(name)
        count += 1
        a, b = np.asarray(ours[name], dtype=np.float64), np.asarray(ref[name], dtype=np.float64)
        if not _equal(a, b, *tolerance):
            diffs.append(Difference(name, "model", _as_list(a), _as_list(b)))
    return count


def _with_reason(d: Difference, reason: Callable[[Difference], str]) -> Difference:
    return Difference(d.field, d.element, d.metasim, d.reference, reason(d), d.collision)


__all__ = [
    "ATOL", "ID_FIELDS", "RTOL", "Difference", "Listed", "compare", "compare_structs",
    "element_keys",
]  # fmt: skip
