"""LIBERO's object and fixture models inside the installed asset packages, and the qpos
layout of LIBERO's compiled model (what an init state's [qpos, qvel] rows mean).

Facts from LIBERO's `envs/objects/*.py` and robosuite 1.4's `MujocoXMLObject`: a category
`c` is the model `stable_scanned_objects/c/c.xml`, `stable_hope_objects/c/c.xml`,
`turbosquid_objects/c/c.xml`, `custom_objects/c/c.xml` (LIBERO-PRO) or
`articulated_objects/c.xml`; robosuite keeps the body named `object` of that file as the
model's root (renamed `<instance>_main`), prefixes every name with `<instance>_`, and gives
objects (not fixtures) a free joint on the root.
The workspace fixtures (`table`, `kitchen_table`, `living_room_table`, `study_table`,
`floor`) are part of the arena, not models. LIBERO's compiled model orders joints as:
robot arm (7), gripper fingers (2), then each object (free joint, then the joints inside
its model), then each fixture's joints, in the BDDL's category order.
"""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from metasim.errors import MetasimInputError
from metasim.libero.importer import paths
from metasim.libero.importer.bddl import BddlProblem

WORKSPACES = ("table", "kitchen_table", "living_room_table", "study_table", "floor")
_FOLDERS = (
    "stable_scanned_objects",
    "stable_hope_objects",
    "turbosquid_objects",
    "custom_objects",  # LIBERO-PRO's added objects
)
ROBOT_JOINTS = (
    *(f"robot0_joint{i}" for i in range(1, 8)),
    "gripper0_finger_joint1",
    "gripper0_finger_joint2",
)
_JOINT_SIZE = {"free": (7, 6), "ball": (4, 3), "hinge": (1, 1), "slide": (1, 1)}


@dataclass(frozen=True)
class ModelJoint:
    """A joint inside an object model: un-prefixed name, MuJoCo type, parent body."""

    name: str
    type: str
    body: str


@dataclass(frozen=True)
class ObjectModel:
    """One LIBERO object/fixture model file and what the root body `object` holds."""

    category: str
    xml: Path
    joints: tuple[ModelJoint, ...]
    site_bodies: dict[str, str]  # site name -> the innermost body holding it
    body_joints: dict[str, tuple[str, ...]]  # body name -> its own joints

    def site_joints(self, site: str) -> tuple[str, ...]:
        """The joints LIBERO ties to a region site: those of the innermost body below the
        root that holds it (none when the site sits on the root)."""
        body = self.site_bodies.get(site)
        return self.body_joints.get(body, ()) if body else ()


def model_xml(category: str) -> Path:
    """The model file of a LIBERO category; an input error if no asset package has it."""
    root = paths.assets_dir()
    for folder in _FOLDERS:
        path = root / folder / category / f"{category}.xml"
        if path.is_file():
            return path
    path = root / "articulated_objects" / f"{category}.xml"
    if path.is_file():
        return path
    raise MetasimInputError("libero", [f"no model for the LIBERO category {category!r} in {root}"])


@functools.cache
def object_model(category: str) -> ObjectModel:
    """Parse a category's model file (its `object` body subtree)."""
    path = model_xml(category)
    tree = ET.parse(path)
    root = tree.getroot().find("./worldbody/body/body[@name='object']")
    if root is None:
        raise MetasimInputError(str(path), ["has no <worldbody><body><body name='object'>"])
    joints: list[ModelJoint] = []
    site_bodies: dict[str, str] = {}
    body_joints: dict[str, tuple[str, ...]] = {}

    def walk(body: ET.Element, name: str, top: bool) -> None:
        own = [j for j in body.findall("./joint")]
        names = tuple(str(j.get("name")) for j in own)
        body_joints[name] = names
        joints.extend(ModelJoint(str(j.get("name")), j.get("type", "hinge"), name) for j in own)
        if not top:
            for site in body.iter("site"):
                site_bodies[str(site.get("name"))] = name
        for i, child in enumerate(body.findall("./body")):
            walk(child, child.get("name") or f"{name}/{i}", False)

    walk(root, "object", True)
    return ObjectModel(category, path, tuple(joints), site_bodies, body_joints)


def models_of(problem: BddlProblem) -> list[tuple[str, str, bool]]:
    """(instance, category, is_object) in LIBERO's model order: objects, then fixtures
    (workspace fixtures excluded)."""
    out = [(n, c, True) for c, names in problem.objects.items() for n in names]
    out += [
        (n, c, False) for c, names in problem.fixtures.items() if c not in WORKSPACES for n in names
    ]
    return out


@dataclass(frozen=True)
class JointSlot:
    """One joint of LIBERO's compiled model: its LIBERO name, type and qpos/qvel widths."""

    name: str
    type: str
    nq: int
    nv: int


def libero_joint_layout(problem: BddlProblem) -> list[JointSlot]:
    """Every joint of LIBERO's compiled model for this problem, in qpos order."""
    slots = [JointSlot(n, "hinge" if "robot" in n else "slide", 1, 1) for n in ROBOT_JOINTS]
    for inst, cat, is_object in models_of(problem):
        if is_object:
            slots.append(JointSlot(f"{inst}_joint0", "free", 7, 6))
        for j in object_model(cat).joints:
            nq, nv = _JOINT_SIZE[j.type]
            slots.append(JointSlot(f"{inst}_{j.name}", j.type, nq, nv))
    return slots
