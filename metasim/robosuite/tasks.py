"""robosuite 1.4.0's single-arm Panda tasks: the facts metasim restates (the rest, the
world itself, is robosuite's own MJCF, exported by the reference: importer/export.py).

Success is robosuite's `_check_success` of each task (robosuite/environments/manipulation/
<task>.py), written as a tree of metasim predicates (kinds.py); numbers as robosuite has
them. Horizons: robomimic's evaluation rollouts (400 steps for Lift, PickPlaceCan,
NutAssemblySquare); Stack and Door, which robomimic does not evaluate, take robosuite's
default `horizon` (1000). `placed`: bodies without joints that robosuite's reset moves
(their poses are part of each initial state).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# r_reach = 1 - tanh(10 d) < 0.6 (PickPlace, NutAssembly): the gripper site farther than
# atanh(0.4) / 10 from the object's body.
RELEASED = math.atanh(0.4) / 10.0
TABLE_Z = {"Lift": 0.8, "Stack": 0.8, "NutAssemblySquare": 0.82}
EEF_SITE = "robot/gripper0_grip_site"


def _above(body: str, z: float) -> dict[str, Any]:
    return {"rs_above": {"body": body, "z": z}}


def _inside(body: str, low: tuple[float, ...], high: tuple[float, ...], frame: str | None = None):
    return {"rs_inside": {"body": body, "low": low, "high": high, "frame": frame}}


def _released(body: str) -> dict[str, Any]:
    return {"rs_apart": {"body": body, "site": EEF_SITE, "distance": RELEASED}}


@dataclass(frozen=True)
class TaskFacts:
    """One task: robosuite's env name, the instruction metasim gives it, success, horizon
    (control steps at 20 Hz), the jointless bodies its reset places, and the scripted
    expert's skill (`expert`: metasim's ExpertSpec fields; None: no expert)."""

    env: str
    instruction: str
    success: dict[str, Any]
    horizon: int = 400
    placed: tuple[str, ...] = ()
    expert: dict[str, Any] | None = None


# PickPlace's can bin (bin 3 of 4 in bin2): x in (bin2_x, bin2_x + 0.39 / 2), y in (bin2_y,
# bin2_y + 0.49 / 2), z in (bin2_z, bin2_z + 0.1); bin2 at (0.1, 0.28, 0.8).
_CAN_BIN = ((0.1, 0.28, 0.8), (0.1 + 0.195, 0.28 + 0.245, 0.9))

TASKS: dict[str, TaskFacts] = {
    "Lift": TaskFacts(
        "Lift",
        "lift the red cube",
        _above("cube_main", TABLE_Z["Lift"] + 0.04),
        expert={"skill": "pick_lift", "object": "cube_main", "lift": 0.1},
    ),
    # staged_rewards: cubeA lifted above the table, touching cubeB, not grasped.
    "Stack": TaskFacts(
        "Stack",
        "stack the red cube on the green cube",
        {
            "all": [
                _above("cubeA_main", TABLE_Z["Stack"] + 0.04),
                {"rs_touching": {"a": "cubeA_main", "b": "cubeB_main"}},
                {"not": {"rs_grasping": {"body": "cubeA_main"}}},
            ]
        },
        horizon=1000,
        expert={
            "skill": "pick_place",
            "object": "cubeA_main",
            "target": "cubeB_main",
            "target_offset": (0.0, 0.0, 0.05),
        },
    ),
    "PickPlaceCan": TaskFacts(
        "PickPlaceCan",
        "put the can in its bin",
        {"all": [_inside("Can_main", *_CAN_BIN), _released("Can_main")]},
        placed=("VisualMilk_main", "VisualBread_main", "VisualCereal_main", "VisualCan_main"),
        expert={
            "skill": "pick_place",
            "object": "Can_main",
            "target": "VisualCan_main",
            "target_offset": (0.0, 0.0, 0.02),
            "lift": 0.15,
        },
    ),
    # on_peg(peg1): |dx|, |dy| < 0.03 from peg1's body and z below the table + 0.05.
    "NutAssemblySquare": TaskFacts(
        "NutAssemblySquare",
        "fit the square nut onto the square peg",
        {
            "all": [
                _inside(
                    "SquareNut_main",
                    (-0.03, -0.03, -math.inf),
                    (0.03, 0.03, TABLE_Z["NutAssemblySquare"] + 0.05),
                    frame="peg1",
                ),
                _released("SquareNut_main"),
            ]
        },
    ),
    # Door: the hinge opened past 0.3 rad; the door's frame is placed at every reset.
    "Door": TaskFacts(
        "Door",
        "open the door",
        {"rs_joint_above": {"joint": "Door_hinge", "value": 0.3}},
        horizon=1000,
        placed=("Door_main",),
        expert={"skill": "open_door", "fixture": "Door_main"},
    ),
}
ROBOSUITE_SUITE = "robosuite"


def task_facts(task: str) -> TaskFacts:
    """The facts of `task`; KeyError listing the known ones."""
    if task not in TASKS:
        raise KeyError(f"no robosuite task {task!r}; known: {', '.join(TASKS)}")
    return TASKS[task]
