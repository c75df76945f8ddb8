"""A robosuite task -> a typed metasim `Scene`: robosuite's own world (export.py) as one
`mjcf` fixture (names kept: `cube_main`, `cube_joint0`, `table`, `agentview`, ...), the
Panda as robosuite builds it (robot0_ arm, gripper0_ gripper, mount0_ Rethink mount) at
the base position robosuite gives it, OSC_POSE at 20 Hz, robosuite's physics options as
its MJCF states them, its offscreen renderer's settings, the wrist camera
`robot0_eye_in_hand` (75°) and episodes that start from robosuite's reset distribution
(recorded initial states, episode k from draw k mod N).

`robosuite:<Task>` names a task (`robosuite:Lift`).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Any

from metasim.errors import MetasimInputError
from metasim.robosuite.importer import robot
from metasim.robosuite.importer.export import Export, export
from metasim.robosuite.tasks import TASKS, task_facts
from metasim.scene.compile import ROBOT_PREFIX
from metasim.scene.mjcf_fixtures import mjcf_lights
from metasim.scene.schema import Scene

PREFIX = "robosuite:"
# robosuite's Panda: `init_qpos` of models/robots/manipulators/panda_robot.py.
INIT_QPOS = (0.0, math.pi / 16, 0.0, -math.pi / 2 - math.pi / 3, 0.0, math.pi - 0.2, math.pi / 4)
CAMERA_SIZE = 84  # robomimic's image datasets and its evaluation rollouts
# The MjOption attributes robosuite's world sets, as metasim's physics fields.
OPTIONS = {"impratio": float, "density": float, "viscosity": float, "cone": str,
           "timestep": float, "integrator": str}  # fmt: skip


def parse_ref(ref: str) -> str:
    """`robosuite:Lift` -> `Lift` (an input error naming the known tasks)."""
    task = ref.removeprefix(PREFIX)
    if task not in TASKS:
        raise MetasimInputError(ref, [f"no robosuite task {task!r}; known: {', '.join(TASKS)}"])
    return task


def physics(ex: Export) -> dict[str, Any]:
    """The option block of robosuite's world as metasim's physics fields (what it leaves
    out is MuJoCo's default, e.g. the Euler integrator, not metasim's)."""
    out: dict[str, Any] = {"floor": False, "integrator": "euler"}
    for el in ET.parse(ex.world).getroot().iter("option"):
        out.update({k: OPTIONS[k](v) for k, v in el.attrib.items() if k in OPTIONS})
    return out


def init_states(ex: Export) -> dict[str, Any]:
    """`task.init_states`: robosuite's joint layout under metasim's names, the placed
    bodies' poses as per-episode model fields, the controller refreshed at the state (its
    OSC is built after the reset writes the joints)."""
    joints = [
        {"name": (ROBOT_PREFIX + n) if n.startswith(("robot0_", "gripper0_")) else n,
         "nq": nq, "nv": nv}
        for n, nq, nv in ex.meta["joints"]
    ]  # fmt: skip
    fields = [
        {"field": f"body_{what}", "name": body, "key": f"{what}_{body}"}
        for body in ex.meta["placed"]
        for what in ("pos", "quat")
    ]
    return {"file": str(ex.states), "key": "states", "joints": joints, "controller": "fresh",
            "state_fields": fields}  # fmt: skip


def scene_dict(task: str) -> dict[str, Any]:
    """The scene of `task` as plain data (what a YAML file of it would hold)."""
    facts = task_facts(task)
    ex = export(task)
    control_hz = float(ex.meta["control_freq"])
    return {
        "name": f"robosuite_{task}",
        "description": f"robosuite 1.4.0 {task}, its own MJCF (exported by the reference)",
        "robot": {
            "name": f"mjcf:{robot.robot_yaml(True)}",
            "pos": tuple(ex.meta["base"]),
            "init_qpos": list(INIT_QPOS),
        },
        # robosuite's offscreen renderer, as LIBERO's scenes state it.
        "render": {
            "headlight_ambient": (0.1, 0.1, 0.1),
            "znear": 0.001,
            "hide_collision_geoms": True,
            "hide_sites": True,
        },
        "physics": physics(ex),
        "fixtures": [{"type": "mjcf", "name": "world", "file": str(ex.world), "lights": False}],
        "cameras": [
            {
                "name": "robot0_eye_in_hand",
                "mount": "wrist",
                "fovy": 75.0,
                "width": CAMERA_SIZE,
                "height": CAMERA_SIZE,
            }
        ],
        "lights": mjcf_lights(ex.world),
        "task": {
            "instruction": facts.instruction,
            "success": facts.success,
            "time_limit": facts.horizon / control_hz,
            "control_hz": control_hz,
            "init_states": init_states(ex),
            **({"expert": facts.expert} if facts.expert else {}),
        },
    }


def load_task(ref: str) -> Scene:
    """The typed scene of `robosuite:<Task>` (validated as a YAML scene is)."""
    return Scene.model_validate(scene_dict(parse_ref(ref)))
