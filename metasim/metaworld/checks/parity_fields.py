"""The package's task XML compiled by the reference's MuJoCo (3.3.0) against the same file
compiled by metasim's (4.0), and metasim's model against the reference's live model
(that compile with the weld data the constructor writes and the rows variation k's reset
writes): every per-element field and every `opt` value that differs, with its reason
(`REASONS`; an unlisted difference has none).

The 3.3.0 arrays come from `reference/compiledump.py` run in the reference venv; they are
written into a MuJoCo 4 compile of the same file (same elements, same order), so
`checks.fields.compare` reads both sides by name; a field whose shape differs across
versions is listed, not copied.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import mujoco
import numpy as np

from metasim.metaworld.checks.fields import FieldDiff, compare
from metasim.metaworld.checks.parity_raw import apply_reset_rows
from metasim.metaworld.importer import paths
from metasim.metaworld.reference.init_states import InitStates

DUMP = Path(__file__).parents[1] / "reference" / "compiledump.py"
# Why a field differs between MuJoCo 3.3.0's and 4.0's compile of the same XML.
REASONS = {
    "eq_data": "MuJoCo 4 stores 12 values per equality (3.3.0: 11); the first 11 are the "
    "weld's anchor, relative pose and torque scale, equal",
    "body_weldid": "the mocap body: welded to itself in 3.3.0, to the world in 4.0 "
    "(bookkeeping; a mocap body has no dofs)",
    "geom_pos": "mesh geoms: 4.0 computes a mesh's frame (centroid, principal axes) "
    "differently, <= 3e-9 m",
    "geom_quat": "mesh geoms: the same mesh frame, <= 2.2e-7 (lever-pull's objGeom: "
    "a different but equivalent principal-axes choice)",
    "geom_size": "mesh geoms: bounding sizes from the same mesh frame, <= 1e-7 m",
    "geom_aabb": "mesh geoms: bounding boxes from the same mesh frame",
    "geom_rbound": "mesh geoms: bounding radii from the same mesh frame",
    "mat_metallic": "a rendering default (-1 in 3.3.0: unset; 0 in 4.0)",
    "mat_roughness": "a rendering default (-1 in 3.3.0: unset; 1 in 4.0)",
    "opt.ccd_iterations": "each version's default (50 in 3.3.0, 35 in 4.0; the XML sets "
    "none): convex collision iterations; no effect measured in the parity runs",
    "opt.sleep_tolerance": "new in 4.0 (sleeping is off: no effect)",
    "opt.apirate": "gone in 4.0 (a rendering-server setting)",
    "mesh_pos": "a mesh's frame (centroid) computed differently, <= 3e-9 m",
    "mesh_quat": "a mesh's frame (principal axes) computed differently, <= 2.2e-7",
    "mesh_polynum": "the mesh polygon tables (merged coplanar faces) are built differently",
    "cam_orthographic": "replaced in 4.0 by cam_projection (all cameras perspective)",
    "light_directional": "replaced in 4.0 by light_type (the same lights)",
    "flex_evpair": "no flexes in any task; the field's layout changed",
    "flex_evpairadr": "no flexes in any task; the field's layout changed",
    "flex_evpairnum": "no flexes in any task; the field's layout changed",
    "flex_internal": "no flexes in any task; the field's layout changed",
    "flex_stiffness": "no flexes in any task; the field's layout changed",
    "body_mass": "mesh-derived masses (a mesh's volume): <= 1e-8 kg apart",
    "body_subtreemass": "sums of the mesh-derived masses: <= 1e-8 kg apart",
    "body_iquat": "mesh-derived inertia axes: <= 1e-7 apart",
    "body_inertia": "mesh-derived inertias: <= 1e-9 apart",
    "body_ipos": "mesh-derived centres of mass: <= 1e-9 m apart",
    # metasim's own import (tests/metaworld/test_metaworld_import.py lists these too)
    "geom_user": "user data dropped by the import (read by nothing in the physics)",
    "actuator_user": "user data dropped by the import (read by nothing in the physics)",
}


def reference_compile(task: str, python: Path) -> dict[str, np.ndarray]:
    """The task XML's arrays as the reference venv's MuJoCo compiles it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "model.npz"
        subprocess.run(
            [str(python), "-P", str(DUMP), str(paths.task_xml(task)), str(out)],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        with np.load(out) as z:
            return {k: z[k] for k in z.files}


def as_model(task: str, arrays: dict[str, np.ndarray]) -> tuple[mujoco.MjModel, list[str]]:
    """A MuJoCo 4 compile of the task XML holding the dumped values; returns it and the
    fields whose shapes differ across versions (not copied)."""
    m = mujoco.MjModel.from_xml_path(str(paths.task_xml(task)))
    skipped = []
    for key, value in arrays.items():
        if key.startswith("opt.") or key == "mujoco_version":
            continue
        target = getattr(m, key, None)
        if not isinstance(target, np.ndarray) or target.shape != value.shape:
            skipped.append(key)
            continue
        if target.flags.writeable:
            target[...] = value
    return m, skipped


def version_diff(task: str, python: Path) -> list[FieldDiff]:
    """Every per-element field that differs between the two versions' compiles."""
    arrays = reference_compile(task, python)
    theirs, skipped = as_model(task, arrays)
    ours = mujoco.MjModel.from_xml_path(str(paths.task_xml(task)))
    _, diffs, _ = compare(ours, theirs)
    diffs += [FieldDiff(k, "shape", [], []) for k in skipped if not k.startswith(("mesh_", "bvh_"))]
    for key, value in arrays.items():
        if key.startswith("opt."):
            mine = getattr(ours.opt, key[4:], None)
            a = None if mine is None else np.asarray(mine, dtype=np.float64).reshape(-1)
            if a is None or a.shape != value.shape or not np.allclose(a, value):
                diffs.append(FieldDiff(key, "model", [] if a is None else list(a), list(value)))
    for key in dir(ours.opt):
        if not key.startswith("_") and f"opt.{key}" not in arrays:
            value = getattr(ours.opt, key)
            if isinstance(value, int | float):
                diffs.append(FieldDiff(f"opt.{key}", "model", [float(value)], []))
    return diffs


def live_diff(task: str, k: int, python: Path, states: InitStates) -> list[FieldDiff]:
    """metasim's model of `task` with episode k's rows against the reference's live model
    of variation k (its compile, the constructor's weld data, the rows reset wrote);
    `states` the variations' reset states (50 of one benchmark)."""
    from metasim.metaworld.importer.init_states import states_file
    from metasim.scene.sources import compile_task

    theirs, _ = as_model(task, reference_compile(task, python))
    apply_reset_rows(theirs, states, k)
    ours = compile_task(_ref(task, states.benchmark)).model
    path, spec = states_file(task, states.benchmark, states.split, states.seed)
    with np.load(path) as z:
        for f in spec["state_fields"]:
            arr = getattr(ours, f["field"])
            row = mujoco.mj_name2id(ours, _OBJ[f["field"].split("_", 1)[0]], f["name"])
            arr[row] = z[f["key"]][k]
    _, diffs, _ = compare(ours, theirs)
    return diffs


_OBJ = {"body": mujoco.mjtObj.mjOBJ_BODY, "site": mujoco.mjtObj.mjOBJ_SITE,
        "geom": mujoco.mjtObj.mjOBJ_GEOM}  # fmt: skip


def _ref(task: str, benchmark: str) -> str:
    return f"metaworld:{task}" if benchmark == "MT50" else f"metaworld:{benchmark}/{task}"


def reason(diff: FieldDiff, task: str = "") -> str:
    """Why a field differs ("" when no reason is listed)."""
    from metasim.metaworld.importer.init_states import ignored_writes

    if task and (diff.field, diff.element) in ignored_writes(task):
        return (
            "written by the package's reset at a site compiled at its body's frame: MuJoCo "
            "ignores it there, the import does not carry it"
        )
    return REASONS.get(diff.field, "")
