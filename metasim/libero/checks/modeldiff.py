"""Model-field parity: every numeric field of an imported LIBERO task's compiled `MjModel`
(MuJoCo 4) against the reference's live `MjModel` (LIBERO on MuJoCo 3.17), element by
element, matched by name.

Both sides are enumerated by the kit's element table, `metasim.reference.mjtable.model_arrays`:
every `MjModel` attribute `<kind>_*` with one row per element of a kind (body, jnt, dof,
geom, site, cam, light, actuator, tendon, eq, mesh, mat, tex, pair, exclude, sensor),
per-element summaries of the mesh and texture data, and the `opt` / `vis` structs; the
kit's engine (`metasim.reference.modeldiff`) compares them, and this module holds LIBERO's
facts. The reference's arrays are dumped from its live model in the worker, not
re-compiled from its exported XML: `get_xml` writes numbers rounded to 6-7 digits, which
would show as differences of its own.

LIBERO samples fixture placements at every reset (up to ~1.5 cm); the diff resets the
reference to init state K with seed 0 and puts metasim's fixtures at the reference's
poses (`parity.place_fixtures`, as `metasim check parity --benchmark libero` does
before stepping) and its objects where the reference's model has them (`place_objects`:
where an object starts is state), then recomputes metasim's derived constants (`mj_setConst`).

Names (`ref_name`): metasim's robot and arena elements carry the prefixes `robot/` and `arena/`, an
object's or fixture's root body is `<instance>` (LIBERO's `<instance>_main`) and an
object's free joint `<instance>/free` (LIBERO's `<instance>_joint0`); everything below an
instance is `<instance>_<name>` on both sides; the geom names robosuite generates for
unnamed geoms count as unnamed (`metasim.robosuite.checks.modeldiff_listed.generated`).
Every difference is listed with its reason in `modeldiff_listed.LISTED` (mirrored by the
table in docs/libero.md) or reported UNLISTED.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import mujoco

from metasim.libero.checks import modeldiff_listed
from metasim.libero.checks.parity import check_args, place_fixtures, prepare
from metasim.libero.importer.scene import ARENA_PREFIX
from metasim.libero.reference.simulator import ReferenceSim
from metasim.reference import modeldiff as engine
from metasim.reference.mjtable import model_arrays
from metasim.reference.modeldiff import Difference
from metasim.robosuite.checks.modeldiff_listed import generated
from metasim.scene.compile import ROBOT_PREFIX

SIDES = ("metasim (MuJoCo 4)", "reference (MuJoCo 3.17)")


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


def compare(
    ours: dict[str, Any], ref: dict[str, Any], roots: dict[str, str]
) -> tuple[list[str], int, dict[str, str], list[Difference]]:
    """Compare two `model_arrays` dumps (metasim's, the reference's) with the kit's engine
    (`metasim.reference.modeldiff.compare`). Returns the fields compared, the number of
    values compared, the skipped fields and the differences."""
    return engine.compare(
        ours,
        ref,
        lambda kind, n: ref_name(kind, n, roots),
        modeldiff_listed.reason_for,
        anonymous=generated,
        sides=SIDES,
    )


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
