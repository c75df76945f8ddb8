"""A LIBERO task -> a typed metasim `Scene`, plus the map from LIBERO's init states onto
the compiled model's joints.

`libero:<suite>/<task>` names a task (index in LIBERO's order, or the task's name), e.g.
`libero:libero_spatial/3`. The scene is built from the BDDL problem and the installed
asset packages, with facts from LIBERO's problem classes (libero/libero/envs/problems,
arenas, robots): the arena XML of the problem class with robosuite's table edits, the
Panda mounted where LIBERO puts it, each object as robosuite keeps it (the `object` body,
free), each fixture fixed at the centre of its placement region and re-placed inside
that region (usually a 2 cm square) at every reset as LIBERO does (`placement`, drawn
per episode seed), LIBERO's region sites, and the cameras `agentview` and
`robot0_eye_in_hand` at LIBERO's poses.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from metasim.errors import MetasimInputError
from metasim.libero.harness_draw import with_harness_draw
from metasim.libero.importer import assets, goals, paths
from metasim.libero.importer.bddl import BddlProblem, BddlRegion, parse_bddl
from metasim.libero.importer.language import scene_name, task_instruction
from metasim.robosuite.importer import robot
from metasim.scene.compile import ROBOT_PREFIX
from metasim.scene.mjcf_fixtures import mjcf_lights
from metasim.scene.schema import Scene

Vec3 = tuple[float, float, float]
CONTROL_HZ = 20.0
ARENA_PREFIX = "arena/"  # names of the arena's elements (`arena/table`, `arena/floor`)
SETTLE_STEPS = 10
# robosuite 1.4's observables (state and camera images) sample on a timer advanced after
# every physics substep's sim.step(); the forced updates of env.reset() and LIBERO's
# set_init_state leave it so that, under LIBERO's harnesses (openpi, LeRobot: reset, then
# set_init_state), every step's observation is taken right after substep 24 of 25
# (`task.observe_substep`; docs/libero.md, "Observation instant").
OBSERVE_SUBSTEP = 24
# Damping of every LIBERO object's free joint, on all six dofs: LIBERO's object classes
# (libero/envs/objects: google_scanned, hope, turbosquid, articulated, self-designed)
# create it as `dict(type="free", damping="0.0005")` (checked in the reference's live
# model by `metasim check modeldiff --benchmark libero`).
OBJECT_DAMPING = 0.0005
# Episode step limits per suite (openpi's LIBERO client; LeRobot uses the same but 280
# for spatial); the settle steps come on top.
SUITE_STEPS = {
    "libero_spatial": 220,
    "libero_object": 280,
    "libero_goal": 300,
    "libero_10": 520,
    "libero_90": 400,
}
_TABLE_VIEW = (
    (0.6586131746834771, 0.0, 1.6103500240372423),
    (0.6380177736282349, 0.3048497438430786, 0.30484986305236816, 0.6380177736282349),
)
# LIBERO's floor and living-room problem classes (`_setup_camera`), digits as written there.
_LOW_VIEW_QUAT = (0.6182166934013367, 0.3432307541370392, 0.3432314395904541, 0.6182177066802979)


@dataclass(frozen=True)
class ArenaFacts:
    """One LIBERO problem class: arena file, workspace (table) offset, the sampler's z
    offset for fixtures, robosuite's table edits, where region sites hang, robot base."""

    xml: str
    offset: Vec3
    z_offset: float
    table_size: Vec3 | None
    region_body: str
    region_z: float
    robot_pos: Vec3
    mounted: bool
    agentview: tuple[Vec3, tuple[float, float, float, float]]
    table_friction: Vec3 = (1.0, 0.005, 0.0001)
    # The problem class's default scene_properties (floor_style, wall_style): LIBERO's arena
    # points the textures `texplane` and `tex-wall` at these files of `textures/`.
    floor: str = "light-gray-floor-tile.png"
    wall: str = "light-gray-plaster.png"


ARENAS: dict[str, ArenaFacts] = {
    "libero_tabletop_manipulation": ArenaFacts(
        "scenes/libero_tabletop_base_style.xml", (0.0, 0.0, 0.9), 0.01 - 0.05,
        (1.0, 1.2, 0.05), "table", 0.02, (-0.66, 0.0, 0.912), True, _TABLE_VIEW,
        table_friction=(0.6, 0.005, 0.0001),
    ),
    "libero_kitchen_tabletop_manipulation": ArenaFacts(
        "scenes/libero_kitchen_tabletop_base_style.xml", (0.0, 0.0, 0.9), 0.01 - 0.05,
        (1.0, 1.2, 0.05), "table", 0.0, (-0.66, 0.0, 0.912), True, _TABLE_VIEW,
        floor="gray_ceramic_tile.png", wall="yellow_linen_wall_texture.png",
    ),
    "libero_study_tabletop_manipulation": ArenaFacts(
        "scenes/libero_study_base_style.xml", (-0.2, 0.0, 0.867), 0.01 - 0.05,
        None, "study_table", 0.867, (-0.75, 0.0, 0.912), True,
        ((0.4586131746834771, 0.0, 1.6103500240372423), _TABLE_VIEW[1]),
    ),
    "libero_living_room_tabletop_manipulation": ArenaFacts(
        "scenes/libero_living_room_tabletop_base_style.xml", (0.0, 0.0, 0.41), 0.01 - 0.024,
        None, "living_room_table", 0.41, (-0.51, 0.0, 0.42), False,
        ((0.6065773716836134, 0.0, 0.96), _LOW_VIEW_QUAT), floor="seamless_wood_planks_floor.png",
    ),
    "libero_floor_manipulation": ArenaFacts(
        "scenes/libero_floor_base_style.xml", (0.0, 0.0, -0.035), -0.025,
        None, "floor", 0.02, (-0.6, 0.0, 0.0), False,
        ((0.8965773716836134, 5.216182733499864e-07, 0.65), _LOW_VIEW_QUAT),
    ),
}  # fmt: skip


@dataclass(frozen=True)
class LiberoTask:
    """An imported task: its scene, problem and init states (50, 1 + nq + nv)."""

    suite: str
    task: str
    index: int
    problem: BddlProblem
    scene: Scene
    init_states: np.ndarray

    @property
    def ref(self) -> str:
        return f"libero:{self.suite}/{self.index}"

    @property
    def max_steps(self) -> int:
        return suite_steps(self.suite)


def suite_steps(suite: str) -> int:
    """The step limit of a suite; a LIBERO-PRO variant (`libero_goal_lan`) takes its base's."""
    for base in sorted(SUITE_STEPS, key=len, reverse=True):
        if suite == base or suite.startswith(base + "_"):
            return SUITE_STEPS[base]
    return SUITE_STEPS["libero_90"]


def parse_ref(ref: str) -> tuple[str, int | str]:
    """`libero:<suite>/<task>` -> (suite, index or name)."""
    body = ref.removeprefix("libero:")
    suite, sep, task = body.partition("/")
    if not sep or not suite or not task:
        raise MetasimInputError(
            "libero", [f"{ref!r}: expected 'libero:<suite>/<task index or name>'"]
        )
    return suite, int(task) if task.isdigit() else task


def load_task(
    ref: str, fixture_draw: str | None = None, init_rows: tuple[int, int] | None = None
) -> LiberoTask:
    """Import `libero:<suite>/<task>`. `fixture_draw`: a harness (`openpi`) whose episode k
    fixture poses metasim's episode k takes (`metasim.libero.harness_draw`); None draws
    them from each episode's seed. `init_rows` [start, stop): only those init states start
    episodes (`task.init_states.rows`), episode k from start + k mod (stop - start)."""
    suite, task = parse_ref(ref)
    name = paths.task_name(suite, task)
    index = paths.suite_tasks(suite).index(name)
    problem = parse_bddl(paths.bddl_file(suite, name))
    init_file = paths.init_states_file(suite, name)
    instruction = task_instruction(suite, name, problem.language)
    scene = build_scene(
        problem, scene_name(suite, index), suite_steps(suite), init_file, instruction
    )
    init_states = paths.load_init_states(suite, name)
    if init_rows is not None:
        if init_rows[1] > len(init_states):
            why = f"init states {init_rows[0]}-{init_rows[1] - 1}: {ref} has {len(init_states)}"
            raise MetasimInputError("init_rows", [why])
        spec = scene.task.init_states
        assert spec is not None
        split = scene.task.model_copy(
            update={"init_states": spec.model_copy(update={"rows": init_rows})}
        )
        scene = scene.model_copy(update={"task": split})
    if fixture_draw is not None:
        offset = ARENAS[problem.problem_name].offset
        scene = with_harness_draw(scene, problem, len(init_states), offset, fixture_draw)
    return LiberoTask(suite, name, index, problem, scene, init_states)


def init_states_spec(problem: BddlProblem, init_file: Path) -> dict[str, Any]:
    """`task.init_states` of a problem: LIBERO's joint layout under metasim's names."""
    free = {inst for inst, _, is_object in assets.models_of(problem) if is_object}
    joints = [
        {"name": metasim_joint(slot.name, free), "nq": slot.nq, "nv": slot.nv}
        for slot in assets.libero_joint_layout(problem)
    ]
    return {"file": str(init_file), "key": "states", "joints": joints, "controller": "stale"}


def build_scene(
    problem: BddlProblem,
    name: str,
    max_steps: int = 400,
    init_file: Path | None = None,
    instruction: str | None = None,
) -> Scene:
    """The typed scene of a BDDL problem (validated): episodes last `max_steps` policy
    steps after `SETTLE_STEPS` settle steps; with `init_file`, they start from LIBERO's
    recorded init states (episode k from state k mod 50). The instruction defaults to the
    BDDL `:language` text (`load_task` gives LIBERO's task's: see `language.py`)."""
    facts = ARENAS.get(problem.problem_name)
    if facts is None:
        raise MetasimInputError(
            "libero", [f"problem class {problem.problem_name!r} is not supported: {sorted(ARENAS)}"]
        )
    root = paths.assets_dir()
    arena: dict[str, Any] = {
        "type": "mjcf", "name": "arena", "file": str(root / facts.xml), "cameras": False,
        "lights": False, "prefix": ARENA_PREFIX,
        "textures": {"texplane": f"../textures/{facts.floor}",
                     "tex-wall": f"../textures/{facts.wall}"},
    }  # fmt: skip
    if facts.table_size is not None:
        arena["table"] = {
            "full_size": facts.table_size,
            "offset": facts.offset,
            "friction": facts.table_friction,
        }
    fixtures = [arena, *_fixtures(problem, facts), *_region_sites(problem, facts)]
    data = {
        "name": name,
        "description": f"LIBERO {problem.problem_name}: {problem.language}",
        "robot": {
            "name": f"mjcf:{robot.robot_yaml(facts.mounted)}",
            "pos": facts.robot_pos,
            "init_qpos": list(robot.INIT_QPOS),
        },
        # robosuite's offscreen renderer: no collision geoms, no sites, MuJoCo's default
        # headlight (ambient 0.1), znear 0.001 (robosuite's world): LIBERO's camera frames
        # (first-frame PSNR 96 dB against the reference on libero_goal 0).
        "render": {
            "headlight_ambient": (0.1, 0.1, 0.1),
            "znear": 0.001,
            "hide_collision_geoms": True,
            "hide_sites": True,
        },
        "physics": {
            "timestep": 0.002,
            "integrator": "euler",
            "impratio": 20.0,
            "cone": "elliptic",
            "density": 1.2,
            "viscosity": 2e-5,
            "floor": False,
        },
        "fixtures": fixtures,
        "objects": _objects(problem, facts),
        "cameras": [
            {
                "name": "agentview",
                "pos": facts.agentview[0],
                "quat": facts.agentview[1],
                "fovy": 45.0,
                "width": 256,
                "height": 256,
            },
            {
                "name": "robot0_eye_in_hand",
                "mount": "wrist",
                "fovy": 75.0,
                "width": 256,
                "height": 256,
            },
        ],
        # The arena's lights, declared as the scene's (the light axes act on them).
        "lights": mjcf_lights(root / facts.xml, ARENA_PREFIX),
        "task": {
            "instruction": instruction or problem.language,
            "success": goals.compile_goal(problem, name),
            "time_limit": (max_steps + SETTLE_STEPS) / CONTROL_HZ,
            "control_hz": CONTROL_HZ,
            "settle_steps": SETTLE_STEPS,
            "observe_substep": OBSERVE_SUBSTEP,
            "init_states": None if init_file is None else init_states_spec(problem, init_file),
        },
    }
    return Scene.model_validate(data)


def _placement(problem: BddlProblem) -> dict[str, BddlRegion]:
    """Instance -> the region its (On x region) init atom places it in."""
    out: dict[str, BddlRegion] = {}
    for atom in problem.init:
        if atom[0] == "on" and len(atom) == 3 and atom[2] in problem.regions:
            out[atom[1]] = problem.regions[atom[2]]
    return out


def _center(region: BddlRegion, facts: ArenaFacts) -> tuple[float, float]:
    if not region.ranges:
        raise KeyError(region.full_name)
    x0, y0, x1, y1 = region.ranges[0]
    return (x0 + x1) / 2 + facts.offset[0], (y0 + y1) / 2 + facts.offset[1]


def _yaw_quat(region: BddlRegion) -> tuple[float, float, float, float]:
    yaw = sum(region.yaw_rotation) / 2
    return (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))


def _fixtures(problem: BddlProblem, facts: ArenaFacts) -> list[dict[str, Any]]:
    where = _placement(problem)
    out = []
    for inst, cat, is_object in assets.models_of(problem):
        if is_object:
            continue
        region = where.get(inst)
        if region is None or not region.ranges:
            raise MetasimInputError("libero", [f"fixture {inst!r} has no placement region"])
        x, y = _center(region, facts)
        z = facts.offset[2] + facts.z_offset - _bottom_z(cat)
        out.append(
            {"type": "mjcf", "name": inst, "file": str(assets.model_xml(cat)),
             "body": "object", "pos": (x, y, z), "quat": _yaw_quat(region),
             "placement": _fixture_placement(region, facts)}
        )  # fmt: skip
    return out


def _fixture_placement(region: BddlRegion, facts: ArenaFacts) -> dict[str, Any]:
    """LIBERO's fixture sampler for `region` (MultiRegionRandomSampler, no margin, no
    rejection): its rectangles moved by the workspace offset, its `yaw_rotation`."""
    dx, dy = facts.offset[0], facts.offset[1]
    rects = [(x0 + dx, y0 + dy, x1 + dx, y1 + dy) for x0, y0, x1, y1 in region.ranges]
    return {"regions": rects, "yaw_low": min(region.yaw_rotation),
            "yaw_high": max(region.yaw_rotation)}  # fmt: skip


def _objects(problem: BddlProblem, facts: ArenaFacts) -> list[dict[str, Any]]:
    where = _placement(problem)
    out = []
    for inst, cat, is_object in assets.models_of(problem):
        if not is_object:
            continue
        region = where.get(inst)
        x, y = _center(region, facts) if region and region.ranges else facts.offset[:2]
        z = facts.offset[2] + 0.05
        out.append(
            {"name": inst, "shape": "mjcf", "mjcf": str(assets.model_xml(cat)),
             "mjcf_body": "object", "pos": (x, y, z), "free_damping": OBJECT_DAMPING}
        )  # fmt: skip
    return out


def _region_sites(problem: BddlProblem, facts: ArenaFacts) -> list[dict[str, Any]]:
    out = []
    for full, region in problem.regions.items():
        if problem.category_of(region.target or "") not in assets.WORKSPACES:
            continue  # regions of objects/fixtures are sites of their models
        x0, y0, x1, y1 = region.ranges[0]
        x, y = _center(region, facts)
        out.append(
            {"type": "site", "name": full, "body": ARENA_PREFIX + facts.region_body,
             "pos": (x, y, facts.region_z), "size": ((x1 - x0) / 2, (y1 - y0) / 2, 0.007),
             "rgba": region.rgba}
        )  # fmt: skip
    return out


@functools.cache
def _bottom_z(category: str) -> float:
    """z of the model's `bottom_site` (robosuite's bottom offset), 0 if it has none."""
    import xml.etree.ElementTree as ET

    tree = ET.parse(assets.model_xml(category))
    for site in tree.getroot().iter("site"):
        if site.get("name") == "bottom_site":
            return float((site.get("pos") or "0 0 0").split()[2])
    return 0.0


def metasim_joint(libero_name: str, free_instances: set[str]) -> str:
    """The compiled model's name of one of LIBERO's joints."""
    if libero_name.startswith(("robot0_", "gripper0_")):
        return ROBOT_PREFIX + libero_name
    inst = libero_name.removesuffix("_joint0")
    if libero_name.endswith("_joint0") and inst in free_instances:
        return f"{inst}/free"
    return libero_name
