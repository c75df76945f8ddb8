"""Model-field parity: every numeric field of an imported LIBERO task's compiled `MjModel`
(MuJoCo 4) against the reference's live `MjModel` (LIBERO on MuJoCo 3.17), element by
element, matched by name.

Both sides are enumerated by one function, `metasim.reference.mjtable.model_arrays`: every `MjModel`
attribute `<kind>_*` with one row per element of a kind (body, jnt, dof, geom, site, cam,
light, actuator, tendon, eq, mesh, mat, tex, pair, exclude, sensor), per-element summaries of the
mesh and texture data, and the `opt` / `vis` structs. The reference's arrays are dumped
from its live model in the worker, not re-compiled from its exported XML: `get_xml`
writes numbers rounded to 6-7 digits, which would show as differences of its own.

LIBERO samples fixture placements at every reset (up to ~1.5 cm); the diff resets the
reference to init state K with seed 0 and puts metasim's fixtures at the reference's
poses (`parity.place_fixtures`, as `metasim libero parity` does before stepping) and its
objects where the reference's model has them (`place_objects`: where an object starts is
state), then recomputes metasim's derived constants (`mj_setConst`).

Names: metasim's robot and arena elements carry the prefixes `robot/` and `arena/`, an
object's or fixture's root body is `<instance>` (LIBERO's `<instance>_main`) and an
object's free joint `<instance>/free` (LIBERO's `<instance>_joint0`); everything below an
instance is `<instance>_<name>` on both sides. Unnamed elements are keyed by their body and
their rank in it (`<body>/geom[2]`), a dof by its joint and its rank (`<joint>[3]`).

Fields pointing at other elements (`geom_bodyid`, `mat_texid`, ...) are compared as the
names they point at; addresses into flat arrays (`*adr`) and other layout indexes
(`ID_FIELDS`' complement ending in `id`) depend on element order, not on the model, and are
not compared. Every difference is listed with its reason in `modeldiff_listed.LISTED`
(mirrored by the table in docs/libero.md) or reported UNLISTED.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from metasim.libero.checks.modeldiff_listed import ATOL, RTOL, Difference, reason_for
from metasim.libero.checks.parity import check_args, place_fixtures, prepare
from metasim.libero.importer.scene import ARENA_PREFIX
from metasim.libero.reference.simulator import ReferenceSim
from metasim.reference.mjtable import MODEL_KINDS, model_arrays
from metasim.scene.compile import ROBOT_PREFIX

# robosuite names every unnamed geom of a part `<prefix>g<k>` (`<prefix>g<k>_vis` when
# visual-only), k counting the part's unnamed geoms in file order.
GENERATED_GEOM = re.compile(r"(^|_)g\d+(_vis)?$")
# Fields whose names end in "id" without being ids.
NOT_IDS = {"geom_fluid"}
# Fields that hold element ids: compared as the (reference-side) names they point at.
ID_FIELDS = {
    "body_parentid": "body", "body_rootid": "body", "body_weldid": "body",
    "jnt_bodyid": "body", "dof_bodyid": "body", "dof_jntid": "jnt", "dof_parentid": "dof",
    "geom_bodyid": "body", "geom_dataid": "mesh", "geom_matid": "mat", "site_bodyid": "body",
    "site_matid": "mat", "cam_bodyid": "body", "cam_targetbodyid": "body",
    "light_bodyid": "body", "light_targetbodyid": "body", "mat_texid": "tex",
    "actuator_trnid": "jnt", "tendon_matid": "mat", "pair_geom1": "geom", "pair_geom2": "geom",
    "eq_obj1id": "body", "eq_obj2id": "body",
}  # fmt: skip


@dataclass
class ModelDiff:
    """The diff of one task: `fields` compared (names), `values` compared (elements x
    fields, struct fields included), `skipped` fields (layout: field -> why) and the
    `differences`."""

    suite: str
    task: int
    init: int
    mujoco: dict[str, str]
    fields: list[str]
    values: int
    skipped: dict[str, str]
    differences: list[Difference]
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def unlisted(self) -> list[Difference]:
        return [d for d in self.differences if not d.listed]

    def summary(self) -> dict[str, Any]:
        return {
            "suite": self.suite, "task": self.task, "init": self.init, "mujoco": self.mujoco,
            "fields_compared": len(self.fields), "values_compared": self.values,
            "skipped": self.skipped, "differences": len(self.differences),
            "unlisted": len(self.unlisted), "rows": [d.row() for d in self.differences],
            "seconds": {k: round(v, 2) for k, v in self.seconds.items()},
        }  # fmt: skip


# ---------------------------------------------------------------- element keys


def ref_name(kind: str, name: str, roots: dict[str, str]) -> str:
    """The reference's name of a metasim element of `kind` (see the module doc); `roots`
    maps an object or fixture instance to the reference's root body name."""
    if kind == "body" and name in roots:
        return roots[name]
    if kind == "jnt" and name.endswith("/free") and name.removesuffix("/free") in roots:
        return name.removesuffix("/free") + "_joint0"
    for prefix in (ROBOT_PREFIX, ARENA_PREFIX):
        if name.startswith(prefix):
            return name.removeprefix(prefix)
    return name


def element_keys(dump: dict[str, Any], rename: Any = None) -> dict[str, list[str]]:
    """kind -> one key per element of a `model_arrays` dump: its (renamed) name, or for an
    unnamed element `<body key>/<kind>[rank]`, `<kind>#rank` without a body; a dof
    `<joint key>[rank]`. `rename(kind, name)` maps metasim names to the reference's;
    without it (the reference) the geom names robosuite generates for unnamed geoms
    (`<prefix>g<k>`, `<prefix>g<k>_vis`) count as unnamed."""
    arrays, keys = dump["arrays"], {}
    for kind, names in dump["names"].items():
        named = [rename(kind, n) if rename and n else n for n in names]
        if rename is None and kind == "geom":
            named = ["" if GENERATED_GEOM.search(n) else n for n in named]
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


# ---------------------------------------------------------------- comparison


def _kind_of(field_name: str) -> str:
    return field_name.split("_", 1)[0]


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
    """element key -> the field's row (names pointed at for `ID_FIELDS`, as an object array)."""
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
    return dict(zip(keys[_kind_of(field_name)], rows, strict=True))


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype == object or b.dtype == object:
        return bool(np.all(a == b))
    return bool(np.allclose(a, b, rtol=RTOL, atol=ATOL))


def _as_list(value: np.ndarray) -> list[Any]:
    return [v if isinstance(v, str) else round(float(v), 9) for v in value.reshape(-1)]


def compare(
    ours: dict[str, Any], ref: dict[str, Any], roots: dict[str, str]
) -> tuple[list[str], int, dict[str, str], list[Difference]]:
    """Compare two `model_arrays` dumps (metasim's, the reference's). Returns the fields
    compared, the number of values compared, the skipped fields and the differences."""
    our_keys = element_keys(ours, lambda kind, n: ref_name(kind, n, roots))
    ref_keys = element_keys(ref)
    diffs: list[Difference] = []
    for kind in MODEL_KINDS:
        for side, keys in (("metasim", our_keys), ("reference", ref_keys)):
            for key in sorted({k for k in keys.get(kind, []) if keys[kind].count(k) > 1}):
                diffs.append(Difference(f"{kind}:duplicate", key, side, side))
        mine, theirs = set(our_keys.get(kind, [])), set(ref_keys.get(kind, []))
        for key in sorted(mine - theirs):
            diffs.append(Difference(f"{kind}:element", key, "present", None))
        for key in sorted(theirs - mine):
            diffs.append(Difference(f"{kind}:element", key, None, "present"))
    fields, skipped, count = [], {}, 0
    groups = ref["arrays"]["geom_group"]
    collision = {k for k, g in zip(ref_keys["geom"], groups, strict=True) if g == 0}
    for name in sorted(set(ours["arrays"]) | set(ref["arrays"])):
        if name not in ours["arrays"] or name not in ref["arrays"]:
            side = "metasim (MuJoCo 4)" if name in ours["arrays"] else "reference (MuJoCo 3.17)"
            skipped[name] = f"only in {side}"
            continue
        if why := _skip_reason(name):
            skipped[name] = why
            continue
        fields.append(name)
        a, b = _values(ours, our_keys, name), _values(ref, ref_keys, name)
        for key in sorted(set(a) & set(b)):
            count += 1
            if not _equal(a[key], b[key]):
                hit = name.startswith("geom_") and key in collision
                diffs.append(Difference(name, key, _as_list(a[key]), _as_list(b[key]), "", hit))
    count += _compare_structs(ours["structs"], ref["structs"], fields, skipped, diffs)
    return fields, count, skipped, [_with_reason(d) for d in diffs]


def _compare_structs(
    ours: dict[str, Any], ref: dict[str, Any], fields: list[str], skipped: dict[str, str],
    diffs: list[Difference],
) -> int:  # fmt: skip
    """Compare the opt/vis struct fields (appends to `fields`, `skipped`, `diffs`)."""
    count = 0
    for name in sorted(set(ours) | set(ref)):
        if name not in ours or name not in ref:
            side = "metasim (MuJoCo 4)" if name in ours else "reference (MuJoCo 3.17)"
            skipped[name] = f"only in {side}"
            continue
        fields.append(name)
        count += 1
        a, b = np.asarray(ours[name], dtype=np.float64), np.asarray(ref[name], dtype=np.float64)
        if not _equal(a, b):
            diffs.append(Difference(name, "model", _as_list(a), _as_list(b)))
    return count


def _with_reason(d: Difference) -> Difference:
    return Difference(d.field, d.element, d.metasim, d.reference, reason_for(d), d.collision)


# ---------------------------------------------------------------- a task


def metasim_model(
    suite: str, task: int, info: dict[str, Any], state: dict[str, Any], ref: dict[str, Any]
) -> mujoco.MjModel:
    """The imported task compiled by metasim, its fixtures at the reference's poses
    (`state`: the reference's reset state), its objects where the reference's model
    (`ref`, a `model_arrays` dump) has them, and its derived constants recomputed."""
    model = prepare(suite, task).compiled.model
    place_fixtures(model, info["fixtures"], info["bodies"], state)
    place_objects(model, info["objects"], ref)
    mujoco.mj_setConst(model, mujoco.MjData(model))
    return model


def place_objects(model: mujoco.MjModel, objects: dict[str, str], ref: dict[str, Any]) -> None:
    """Put each object's root body and free joint's qpos0 where the reference's model has
    them (`objects`: instance -> reference body; `ref`: its `model_arrays` dump). Where an
    object starts is state (every episode's init state sets it); LIBERO compiles it at
    its placement sampler's pose, metasim at its region's centre."""
    names = ref["names"]["body"]
    for inst, root in objects.items():
        i, b = names.index(root), model.body(inst).id
        model.body_pos[b] = ref["arrays"]["body_pos"][i]
        model.body_quat[b] = ref["arrays"]["body_quat"][i]
        adr = model.jnt_qposadr[model.joint(f"{inst}/free").id]
        model.qpos0[adr : adr + 3] = model.body_pos[b]
        model.qpos0[adr + 3 : adr + 7] = model.body_quat[b]


def diff_task(ref: ReferenceSim, suite: str, task: int, init: int = 0) -> ModelDiff:
    """Load the task in the reference, reset it to init state `init` (seed 0), dump its
    live model and compare it with metasim's (module doc)."""
    check_args(suite, task, init, 1)
    sec: dict[str, float] = {}
    start = time.perf_counter()
    info = ref.load(suite, task, size=256, cameras=True)
    state, _ = ref.reset(init=init, seed=0)
    theirs = ref.model()
    sec["reference"] = time.perf_counter() - start
    start = time.perf_counter()
    ours = model_arrays(metasim_model(suite, task, info, state, theirs), mujoco)
    sec["metasim"] = time.perf_counter() - start
    roots = {**info["objects"], **info["fixtures"]}
    fields, count, skipped, diffs = compare(ours, theirs, roots)
    versions = {"metasim": mujoco.__version__, "reference": str(theirs.get("mujoco", ""))}
    return ModelDiff(suite, task, init, versions, fields, count, skipped, diffs, sec)


def run_modeldiff(
    suite: str, task: int, init: int = 0, ref: ReferenceSim | None = None
) -> ModelDiff:
    """`diff_task` with its own ReferenceSim unless one is given (arguments checked first)."""
    check_args(suite, task, init, 1)
    if ref is not None:
        return diff_task(ref, suite, task, init)
    with ReferenceSim() as own:
        return diff_task(own, suite, task, init)


def format_diff(summary: dict[str, Any]) -> str:
    """A readable table of a `ModelDiff.summary()`."""
    s = summary
    lines = [
        f"{s['suite']} task {s['task']}, init {s['init']}: metasim MuJoCo "
        f"{s['mujoco']['metasim']} vs reference MuJoCo {s['mujoco']['reference']}",
        f"{s['fields_compared']} fields, {s['values_compared']} values compared; "
        f"{len(s['skipped'])} fields not compared (layout or one version only)",
    ]
    for row in s["rows"]:
        lines.append(
            f"  {row['field']:<24} {row['element']:<44} metasim {_short(row['metasim'])}  "
            f"reference {_short(row['reference'])}  {row['reason']}"
        )
    lines.append(
        f"{s['differences']} differences, {s['unlisted']} unlisted"
        + ("" if s["unlisted"] else " (every difference is listed)")
    )
    return "\n".join(lines)


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."
