"""Model diff against robosuite's own MjModel: every numeric field of metasim's compiled
task against the live model of robosuite's env built the same way (seed `MODEL_SEED`),
after one reset draw (`INIT`) written on both sides, matched by name. Both sides are
dumped by the kit's element table (`metasim.reference.mjtable`, handed to the worker as
`TABLES`) and compared by the kit's engine (`metasim.reference.modeldiff`); this module
holds robosuite's facts. metasim's robot elements carry `robot/`, everything else keeps
robosuite's names; the geom names robosuite generates count as unnamed (LIBERO's
`GENERATED_GEOM`: the same robosuite parts). Differences are explained by `LISTED` here,
then by LIBERO's listed differences (the robot, the renderer and the MuJoCo versions are
the same there)."""

from __future__ import annotations

from typing import Any

import mujoco

from metasim.libero.checks import modeldiff_listed
from metasim.libero.checks.modeldiff import GENERATED_GEOM
from metasim.reference import modeldiff
from metasim.reference.mjtable import model_arrays
from metasim.reference.modeldiff import Difference, Listed
from metasim.robosuite.checks.states import state_map
from metasim.robosuite.importer.export import MODEL_SEED
from metasim.robosuite.reference.simulator import RobosuiteRef
from metasim.robosuite.tasks import task_facts
from metasim.scene.compile import ROBOT_PREFIX
from metasim.scene.sources import compile_task

INIT = 0
_FT = "ft"
LISTED: tuple[Listed, ...] = (
    Listed("cam:element", "robot0_eye_in_hand", "metasim adds the wrist camera from the "
           "robot descriptor (same body, pose and fovy)", reference="present"),
    Listed("*", "robot0_eye_in_hand", "the wrist camera: see cam:element"),
    Listed("site:element", "gripper0_ft_frame", _FT, reference="present"),
)  # fmt: skip
_REASONS = {_FT: "robosuite's sensor frame of the removed F/T sensors"}


def reason_for(d: Difference) -> str:
    """The reason of a difference: robosuite's `LISTED`, then LIBERO's; "" when none."""
    return modeldiff.reason_for(d, LISTED, _REASONS) or modeldiff_listed.reason_for(d)


def renamer(ref_lights: set[str]) -> modeldiff.Rename:
    """metasim's name -> robosuite's: `robot/` dropped; robosuite's generated geom names
    (`<prefix>g<k>`) and the names metasim gives the world's unnamed lights (`light<k>`)
    blanked, so both sides key those elements by body and rank, as the reference's are."""

    def rename(kind: str, name: str) -> str:
        if kind == "geom" and GENERATED_GEOM.search(name):
            return ""
        if kind == "light" and name.startswith("light") and name not in ref_lights:
            return ""
        return name.removeprefix(ROBOT_PREFIX)

    return rename


def _generated(kind: str, name: str) -> bool:
    return kind == "geom" and bool(GENERATED_GEOM.search(name))


def diff_task(ref: RobosuiteRef, task: str) -> dict[str, Any]:
    """Build `task` in the reference, write reset draw `INIT` on both sides, compare."""
    facts = task_facts(task)
    ref.load(facts.env, seed=MODEL_SEED, placed=list(facts.placed))
    state = ref.reset(seed=INIT)
    theirs = ref.model()
    compiled = compile_task(f"robosuite:{task}")
    data = mujoco.MjData(compiled.model)
    state_map(task, compiled).apply(compiled, data, state)
    ours = model_arrays(compiled.model, mujoco)
    rename = renamer(set(theirs["names"]["light"]))
    fields, count, _, diffs = modeldiff.compare(ours, theirs, rename, reason_for, _generated)
    return {"task": task, "fields": len(fields), "values": count,
            "differences": len(diffs), "unlisted": [d.row() for d in diffs if not d.listed],
            "listed": len([d for d in diffs if d.listed])}  # fmt: skip
