"""Model diff against robosuite's own MjModel: every numeric field of metasim's compiled
task against the live model of robosuite's env built the same way (seed `MODEL_SEED`),
after one reset draw (`INIT`) written on both sides, matched by name. The engine and the
element table are LIBERO's (metasim.libero.checks.modeldiff, reference/model.py: the
same robosuite parts); metasim's robot elements carry `robot/`, everything else keeps
robosuite's names. Differences are explained by `LISTED` here, then by LIBERO's table
(the robot, the renderer and the MuJoCo versions are the same there)."""

from __future__ import annotations

from typing import Any

import mujoco

from metasim.libero.checks import modeldiff as engine
from metasim.libero.checks.modeldiff_listed import Difference, Listed, reason_for
from metasim.libero.reference import model as table
from metasim.robosuite.checks.states import state_map
from metasim.robosuite.importer.export import MODEL_SEED
from metasim.robosuite.reference.simulator import RobosuiteRef
from metasim.robosuite.tasks import task_facts
from metasim.scene.sources import compile_task

INIT = 0
LISTED: tuple[Listed, ...] = (
    Listed("cam:element", "robot0_eye_in_hand", "metasim adds the wrist camera from the "
           "robot descriptor (same body, pose and fovy)", reference="present"),
    Listed("*", "robot0_eye_in_hand", "the wrist camera: see cam:element"),
    Listed("site:element", "gripper0_ft_frame", "", reference="present"),
)  # fmt: skip


def _reason(d: Difference) -> str:
    for listed in LISTED:
        if listed.matches(d):
            return listed.reason or "robosuite's sensor frame of the removed F/T sensors"
    return reason_for(d)


def unnamed(dump: dict[str, Any], ref_lights: set[str]) -> dict[str, Any]:
    """metasim's dump with robosuite's generated geom names (`<prefix>g<k>`) and the names
    metasim gives the world's unnamed lights (`light<k>`) blanked, so both sides key those
    elements by body and rank, as the reference's are."""
    names = dump["names"]
    names["geom"] = ["" if engine.GENERATED_GEOM.search(n) else n for n in names["geom"]]
    names["light"] = [n if n in ref_lights or not n.startswith("light") else ""
                      for n in names["light"]]  # fmt: skip
    return dump


def diff_task(ref: RobosuiteRef, task: str) -> dict[str, Any]:
    """Build `task` in the reference, write reset draw `INIT` on both sides, compare."""
    facts = task_facts(task)
    ref.load(facts.env, seed=MODEL_SEED, placed=list(facts.placed))
    state = ref.call("reset", seed=INIT)
    theirs = ref.call("model", table=table.__file__)
    compiled = compile_task(f"robosuite:{task}")
    data = mujoco.MjData(compiled.model)
    state_map(task, compiled).apply(compiled, data, state)
    ours = unnamed(table.model_arrays(compiled.model, mujoco), set(theirs["names"]["light"]))
    fields, count, skipped, diffs = engine.compare(ours, theirs, {})
    diffs = [Difference(d.field, d.element, d.metasim, d.reference, _reason(d), d.collision)
             for d in diffs]  # fmt: skip
    return {"task": task, "fields": len(fields), "values": count,
            "differences": len(diffs), "unlisted": [d.row() for d in diffs if not d.listed],
            "listed": len([d for d in diffs if d.listed])}  # fmt: skip
