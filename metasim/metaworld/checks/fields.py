"""Every per-element field of two compiled `MjModel`s, matched by element name: metasim's
model of a Meta-World task against the package's own task XML compiled by the same
MuJoCo (`compare_to_xml`), which isolates what the import changes from what a MuJoCo
version changes (the reference diff across versions is the parity command's).

Elements are keyed by name with metasim's prefixes dropped (`robot/`, `world/`); an
unnamed element by its body's key and its rank in that body (`hand/geom[2]`; in the world
body `light0`, as the scene names the XML's unnamed lights); an unnamed actuator by its
joint; a dof by its joint and rank. Fields that point at other elements (`geom_bodyid`,
...) compare the keys they point at; addresses into flat arrays (`*adr`) and other ids
depend on element order and are not compared.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from metasim.reference.mjtable import MODEL_KINDS

# The element table's kinds this diff keys (metasim.reference.mjtable), in its order:
# kind -> (count attribute, mjtObj or None for dofs).
KINDS = {
    kind: (MODEL_KINDS[kind][0], getattr(mujoco.mjtObj, MODEL_KINDS[kind][1], None))
    for kind in ("body", "jnt", "geom", "site", "cam", "light", "actuator", "eq", "mesh",
                 "mat", "tex", "dof")
}  # fmt: skip
POINTERS = {
    "body_parentid": "body", "body_rootid": "body", "body_weldid": "body", "jnt_bodyid": "body",
    "dof_bodyid": "body", "dof_jntid": "jnt", "geom_bodyid": "body", "geom_matid": "mat",
    "geom_dataid": "mesh", "site_bodyid": "body", "cam_bodyid": "body", "light_bodyid": "body",
    "mat_texid": "tex", "actuator_trnid": "jnt", "eq_obj1id": "body", "eq_obj2id": "body",
}  # fmt: skip
PREFIXES = ("robot/", "world/")


@dataclass(frozen=True)
class FieldDiff:
    field: str
    element: str
    ours: list[float | str]
    theirs: list[float | str]


def element_keys(model: mujoco.MjModel) -> dict[str, list[str]]:
    """kind -> one key per element (see the module doc)."""
    keys: dict[str, list[str]] = {}
    for kind in ("body", "jnt", "geom", "site", "cam", "light", "actuator", "eq", "mesh",
                 "mat", "tex"):  # fmt: skip
        count, obj = KINDS[kind]
        names = [mujoco.mj_id2name(model, obj, i) or "" for i in range(getattr(model, count))]
        for p in PREFIXES:
            names = [n.removeprefix(p) for n in names]
        keys[kind] = names
    # an unnamed joint by its id, as the import names it (`joint9`)
    keys["jnt"] = [n or f"joint{i}" for i, n in enumerate(keys["jnt"])]
    for kind, parent in (("jnt", "jnt_bodyid"), ("geom", "geom_bodyid"), ("site", "site_bodyid"),
                         ("cam", "cam_bodyid"), ("light", "light_bodyid")):  # fmt: skip
        seen: dict[str, int] = {}
        for i, name in enumerate(keys[kind]):
            if not name:
                body = int(getattr(model, parent)[i])
                base = f"{keys['body'][body]}/{kind}" if body else kind  # world: `light0`
                seen[base] = seen.get(base, -1) + 1
                keys[kind][i] = f"{base}[{seen[base]}]" if body else f"{base}{seen[base]}"
    # an unnamed actuator is keyed by its joint (Meta-World's finger actuators)
    keys["actuator"] = [n or keys["jnt"][model.actuator_trnid[i, 0]]
                        for i, n in enumerate(keys["actuator"])]  # fmt: skip
    for kind in ("eq", "mesh", "mat", "tex"):
        keys[kind] = [n or f"{kind}#{i}" for i, n in enumerate(keys[kind])]
    jnt = model.dof_jntid
    keys["dof"] = [f"{keys['jnt'][j]}[{d - int(np.flatnonzero(jnt == j)[0])}]"
                   for d, j in enumerate(jnt)]  # fmt: skip
    return keys


def _fields(model: mujoco.MjModel, kind: str) -> list[str]:
    count = getattr(model, KINDS[kind][0])
    out = []
    for name in dir(model):
        if not name.startswith(kind + "_"):
            continue
        value = getattr(model, name, None)
        if not isinstance(value, np.ndarray) or value.ndim == 0 or value.shape[0] != count:
            continue
        if name not in POINTERS and (name.endswith("adr") or name.endswith("id")):
            continue
        out.append(name)
    return out


def rows(model: mujoco.MjModel, keys: dict[str, list[str]], field: str) -> dict[str, np.ndarray]:
    """element key -> the field's row (keys of the elements pointed at, for pointers)."""
    kind = field.split("_", 1)[0]
    arr: np.ndarray = np.asarray(getattr(model, field)).reshape(getattr(model, KINDS[kind][0]), -1)
    target = POINTERS.get(field)
    if target is not None:
        names = keys[target]
        arr = np.array([[names[v] if 0 <= v < len(names) else "-" for v in r] for r in arr],
                       dtype=object)  # fmt: skip
    return dict(zip(keys[kind], arr, strict=True))


def compare(ours: mujoco.MjModel, theirs: mujoco.MjModel, atol: float = 1e-9) -> tuple[
    int, list[FieldDiff], dict[str, tuple[set[str], set[str]]]
]:  # fmt: skip
    """(values compared, differing rows, kind -> (elements only ours, only theirs))."""
    ka, kb = element_keys(ours), element_keys(theirs)
    extra = {k: (set(ka[k]) - set(kb[k]), set(kb[k]) - set(ka[k])) for k in ka}
    diffs, count = [], 0
    for kind in KINDS:
        for field in sorted(set(_fields(ours, kind)) & set(_fields(theirs, kind))):
            a, b = rows(ours, ka, field), rows(theirs, kb, field)
            for key in sorted(set(a) & set(b)):
                count += a[key].size
                x, y = a[key], b[key]
                same = (
                    x.shape == y.shape and bool(np.all(x == y)) if x.dtype == object
                    else x.shape == y.shape and bool(np.allclose(x, y, rtol=0, atol=atol))
                )  # fmt: skip
                if not same:
                    diffs.append(FieldDiff(field, key, _plain(x), _plain(y)))
    return count, diffs, {k: v for k, v in extra.items() if v[0] or v[1]}


def _plain(row: np.ndarray) -> list[float | str]:
    return [v if isinstance(v, str) else round(float(v), 9) for v in row.reshape(-1)]


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
    a, b = struct_values(ours), struct_values(theirs)
    return [
        FieldDiff(k, "model", _plain(a[k]), _plain(b[k]))
        for k in sorted(set(a) & set(b))
        if a[k].shape != b[k].shape or not np.allclose(a[k], b[k], rtol=1e-9, atol=1e-12)
    ]
