"""Every per-element field of two compiled `MjModel`s, matched by element name: metasim's
model of a Meta-World task against the package's own task XML compiled by the same
MuJoCo (`compare_to_xml`), which isolates what the import changes from what a MuJoCo
version changes (the reference diff across versions is the parity command's).

Both models are dumped by the kit's element table (`metasim.reference.mjtable`) and
compared by the kit's engine (`metasim.reference.modeldiff`) within an absolute `ATOL`;
this module holds Meta-World's facts: which kinds and fields it compares (`KINDS`,
`POINTERS`) and its naming table (`names`). Elements are keyed by name with metasim's
prefixes dropped (`robot/`, `world/`); an unnamed element by its body's key and its rank
in that body (`hand/geom[2]`; in the world body `light0`, as the scene names the XML's
unnamed lights); an unnamed joint by its id (`joint9`, as the import names it); an
unnamed actuator by its joint; a dof by its joint and rank. Fields that point at other
elements (`geom_bodyid`, ...) compare the keys they point at; addresses into flat arrays
(`*adr`) and other ids depend on element order and are not compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from metasim.reference import modeldiff
from metasim.reference.mjtable import model_arrays

# The element table's kinds this diff keys (metasim.reference.mjtable), in its order.
KINDS = ("body", "jnt", "geom", "site", "cam", "light", "actuator", "eq", "mesh", "mat",
         "tex", "dof")  # fmt: skip
# The id fields compared as the keys they point at (the engine's `ID_FIELDS` says where).
POINTERS = {
    "body_parentid", "body_rootid", "body_weldid", "jnt_bodyid", "dof_bodyid", "dof_jntid",
    "geom_bodyid", "geom_matid", "geom_dataid", "site_bodyid", "cam_bodyid", "light_bodyid",
    "mat_texid", "actuator_trnid", "eq_obj1id", "eq_obj2id",
}  # fmt: skip
PREFIXES = ("robot/", "world/")
ATOL = 1e-9
STRUCT_TOLERANCE = (1e-9, 1e-12)


@dataclass(frozen=True)
class FieldDiff:
    field: str
    element: str
    ours: list[float | str]
    theirs: list[float | str]


def _strip(name: str) -> str:
    for p in PREFIXES:
        name = name.removeprefix(p)
    return name


def names(dump: dict[str, Any]) -> dict[str, list[str]]:
    """kind -> the names Meta-World's diff keys elements by (the module doc): prefixes
    dropped, an unnamed joint `joint<i>`, an unnamed element of the world body
    `<kind><rank>`, an unnamed actuator its joint's key, an unnamed equality, mesh,
    material or texture `<kind>#<i>`; the engine keys the other unnamed elements."""
    arrays = dump["arrays"]
    out = {kind: [_strip(n) for n in dump["names"][kind]] for kind in KINDS if kind != "dof"}
    out["jnt"] = [n or f"joint{i}" for i, n in enumerate(out["jnt"])]
    for kind in ("geom", "site", "cam", "light"):
        world = [i for i, n in enumerate(out[kind]) if not n and arrays[f"{kind}_bodyid"][i] == 0]
        for rank, i in enumerate(world):
            out[kind][i] = f"{kind}{rank}"
    trn = arrays["actuator_trnid"]
    out["actuator"] = [n or out["jnt"][trn[i, 0]] for i, n in enumerate(out["actuator"])]
    for kind in ("eq", "mesh", "mat", "tex"):
        out[kind] = [n or f"{kind}#{i}" for i, n in enumerate(out[kind])]
    return out


def _compared(field: str) -> bool:
    kind = field.split("_", 1)[0]
    if kind not in KINDS or "@" in field:
        return False
    return field in POINTERS or not (field.endswith("adr") or field.endswith("id"))


def dump(model: mujoco.MjModel) -> dict[str, Any]:
    """The element table of `model` as this diff compares it: its `KINDS`' fields, named
    by `names`, without the global structs (`compare_structs` has those)."""
    full = model_arrays(model, mujoco)
    arrays = {k: v for k, v in full["arrays"].items() if _compared(k)}
    return {"arrays": arrays, "names": names(full), "structs": {}}


def compare(ours: mujoco.MjModel, theirs: mujoco.MjModel, atol: float = ATOL) -> tuple[
    int, list[FieldDiff], dict[str, tuple[set[str], set[str]]]
]:  # fmt: skip
    """(values compared, differing rows, kind -> (elements only ours, only theirs))."""
    _, count, _, diffs = modeldiff.compare(
        dump(ours), dump(theirs), lambda kind, name: name, lambda d: "",
        tolerance=(0.0, atol), scalars=True,
    )  # fmt: skip
    extra: dict[str, tuple[set[str], set[str]]] = {}
    rows = []
    for d in diffs:
        if d.field.endswith(":element"):
            mine, other = extra.setdefault(d.field.split(":")[0], (set(), set()))
            (mine if d.metasim == "present" else other).add(d.element)
        else:
            rows.append(FieldDiff(d.field, d.element, d.metasim, d.reference))
    rows.sort(key=lambda r: KINDS.index(r.field.split("_", 1)[0]))  # by kind, as listed
    return count, rows, extra


STRUCTS = ("opt", "vis.global_", "vis.quality", "vis.headlight", "vis.map", "stat")


def struct_values(model: mujoco.MjModel) -> dict[str, np.ndarray]:
    """`<struct>.<field>` -> value (float64 array) of the global settings structs."""
    out = {}
    for path in STRUCTS:
        obj = model
        for part in path.split("."):
            obj = getattr(obj, part)
        for key in dir(obj):
            if key.startswith("_"):
                continue
            value = getattr(obj, key)
            if isinstance(value, bool | int | float | np.ndarray) or hasattr(value, "__int__"):
                try:
                    out[f"{path}.{key}"] = np.asarray(value, dtype=np.float64).reshape(-1)
                except (TypeError, ValueError):
                    continue
    return out


def compare_structs(ours: mujoco.MjModel, theirs: mujoco.MjModel) -> list[FieldDiff]:
    """The global settings (opt, vis, stat) that differ."""
    diffs: list[modeldiff.Difference] = []
    sides = ("metasim", "package")
    a, b = struct_values(ours), struct_values(theirs)
    modeldiff.compare_structs(a, b, sides, [], {}, diffs, STRUCT_TOLERANCE)
    return [FieldDiff(d.field, d.element, d.metasim, d.reference) for d in diffs]
