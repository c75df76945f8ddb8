"""Model diff against robosuite's own MjModel: every numeric field of metasim's compiled
task against the live model of robosuite's env built the same way (seed `MODEL_SEED`),
after one reset draw (`INIT`) written on both sides, matched by name. Both sides are
dumped by the kit's element table (`metasim.reference.mjtable`, handed to the worker as
`TABLES`) and compared by the kit's engine (`metasim.reference.modeldiff`); this module
holds robosuite's facts. metasim's robot elements carry `robot/`, everything else keeps
robosuite's names; the geom names robosuite generates count as unnamed
(`modeldiff_listed.generated`). Differences are explained by `LISTED`: robosuite's own
here, then its renderer's and MuJoCo 3.17's (`modeldiff_listed`, which LIBERO's list
shares)."""

from __future__ import annotations

from typing import Any

import mujoco

from metasim.reference import modeldiff
from metasim.reference.mjtable import model_arrays
from metasim.reference.modeldiff import Difference, Listed
from metasim.robosuite.checks.modeldiff_listed import NOTES, RENDER, VERSIONS, generated
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
    *RENDER,
    *VERSIONS,
)  # fmt: skip
_REASONS = {**NOTES, _FT: "robosuite's sensor frame of the removed F/T sensors"}


def reason_for(d: Difference) -> str:
    """The `LISTED` reason of a difference, "" when it is not listed."""
    return modeldiff.reason_for(d, LISTED, _REASONS)


def renamer(ref_lights: set[str]) -> modeldiff.Rename:
    """metasim's name -> robosuite's: `robot/` dropped; robosuite's generated geom names
    (`<prefix>g<k>`) and the names metasim gives the world's unnamed lights (`light<k>`)
    blanked, so both sides key those elements by body and rank, as the reference's are."""

    def rename(kind: str, name: str) -> str:
        if generated(kind, name):
            return ""
        if kind == "light" and name.startswith("light") and name not in ref_lights:
            return ""
        return name.removeprefix(ROBOT_PREFIX)

    return rename


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
    fields, count, _, diffs = modeldiff.compare(ours, theirs, rename, reason_for, generated)
    return {"task": task, "fields": len(fields), "values": count,
            "differences": len(diffs), "unlisted": [d.row() for d in diffs if not d.listed],
            "listed": len([d for d in diffs if d.listed])}  # fmt: skip
