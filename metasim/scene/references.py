"""Cross-reference checks a schema cannot express: names that must exist, files on disk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from metasim.scene.robots import RobotError, resolve_robot
from metasim.scene.schema import (
    AllOf,
    AnyOf,
    DrawerSpec,
    Grasped,
    InRegion,
    JointClosed,
    JointOpen,
    Lifted,
    Not,
    On,
    Predicate,
    Scene,
)

Loc = tuple[int | str, ...]
Issue = tuple[Loc, str]


def fixture_bodies(scene: Scene) -> set[str]:
    """Body names the fixtures create (usable as region frames and supports)."""
    names: set[str] = set()
    for fx in scene.fixtures:
        names.add(fx.name)
        if isinstance(fx, DrawerSpec):
            names.add(f"{fx.name}/drawer")
    return names


def fixture_sites(scene: Scene) -> set[str]:
    """Site names the fixtures create (usable as expert targets)."""
    names: set[str] = set()
    for fx in scene.fixtures:
        if isinstance(fx, DrawerSpec):
            names.update({f"{fx.name}/handle", f"{fx.name}/inside"})
    return names


def joint_names(scene: Scene) -> set[str]:
    """Articulated joints by the names predicates may use (fixture name or full joint name)."""
    names: set[str] = set()
    for fx in scene.fixtures:
        if isinstance(fx, DrawerSpec):
            names.update({fx.name, f"{fx.name}/slide"})
    return names


def walk_predicates(pred: Predicate, loc: Loc) -> Iterator[tuple[Predicate, Loc]]:
    yield pred, loc
    if isinstance(pred, AllOf):
        for i, child in enumerate(pred.all):
            yield from walk_predicates(child, (*loc, "all", i))
    elif isinstance(pred, AnyOf):
        for i, child in enumerate(pred.any):
            yield from walk_predicates(child, (*loc, "any", i))
    elif isinstance(pred, Not):
        yield from walk_predicates(pred.not_, (*loc, "not"))


def _predicate_issues(scene: Scene, pred: Predicate, loc: Loc) -> Iterator[Issue]:
    objects = {o.name for o in scene.objects}
    bodies = objects | fixture_bodies(scene)
    joints = joint_names(scene)

    def obj(name: str, where: Loc) -> Iterator[Issue]:
        if name not in objects:
            yield where, f"names object {name!r}, which the scene does not have ({_some(objects)})"

    for node, at in walk_predicates(pred, loc):
        if isinstance(node, InRegion):
            yield from obj(node.in_region.object, (*at, "in_region", "object"))
            frame = node.in_region.region.frame
            if frame is not None and frame not in bodies:
                yield (*at, "in_region", "region", "frame"), (
                    f"names body {frame!r}, which the scene does not have ({_some(bodies)})"
                )
        elif isinstance(node, On):
            yield from obj(node.on.object, (*at, "on", "object"))
            if node.on.support not in bodies:
                yield (*at, "on", "support"), (
                    f"names {node.on.support!r}, which the scene does not have ({_some(bodies)})"
                )
        elif isinstance(node, Lifted):
            yield from obj(node.lifted.object, (*at, "lifted", "object"))
        elif isinstance(node, Grasped):
            yield from obj(node.grasped.object, (*at, "grasped", "object"))
        elif isinstance(node, JointOpen | JointClosed):
            args = node.joint_open if isinstance(node, JointOpen) else node.joint_closed
            key = "joint_open" if isinstance(node, JointOpen) else "joint_closed"
            if args.joint not in joints:
                yield (*at, key, "joint"), (
                    f"names joint {args.joint!r}, which the scene does not have ({_some(joints)})"
                )


def _some(names: set[str]) -> str:
    if not names:
        return "it has none"
    return "it has " + ", ".join(sorted(names))


def check_references(scene: Scene, base_dir: Path) -> list[Issue]:
    """Every dangling name or missing file in `scene`, with the field path that holds it."""
    issues: list[Issue] = []
    try:
        robot = resolve_robot(scene.robot.name, base_dir)
        if scene.robot.init_qpos is not None and len(scene.robot.init_qpos) != len(
            robot.arm_joints
        ):
            issues.append(
                (
                    ("robot", "init_qpos"),
                    f"expected {len(robot.arm_joints)} joint values for {robot.name}, "
                    f"got {len(scene.robot.init_qpos)}",
                )
            )
        if robot.wrist_camera is None:
            for i, cam in enumerate(scene.cameras):
                if cam.mount == "wrist":
                    issues.append(
                        (("cameras", i, "mount"), f"robot {robot.name} has no wrist camera mount")
                    )
    except RobotError as exc:
        issues.append((("robot", "name"), str(exc)))

    materials = {m.name for m in scene.materials}
    for key, items in (("objects", scene.objects), ("fixtures", scene.fixtures)):
        for i, item in enumerate(items):
            mat = getattr(item, "material", None)
            if mat is not None and mat not in materials:
                issues.append(
                    ((key, i, "material"), f"names material {mat!r}, not defined ({_some(materials)})")
                )
    for i, mat in enumerate(scene.materials):
        if mat.texture and mat.texture.file and not (base_dir / mat.texture.file).is_file():
            issues.append(
                (("materials", i, "texture", "file"), f"file {mat.texture.file!r} does not exist")
            )

    fixture_names = {f.name for f in scene.fixtures}
    for i, ob in enumerate(scene.objects):
        if ob.name in fixture_names:
            issues.append((("objects", i, "name"), f"the name {ob.name!r} is also a fixture's"))
        for attr in ("mesh", "mjcf"):
            rel = getattr(ob, attr)
            if rel and not (base_dir / rel).is_file():
                issues.append(
                    (("objects", i, attr), f"file {rel!r} does not exist (relative to {base_dir})")
                )

    task = scene.task
    issues.extend(_predicate_issues(scene, task.success, ("task", "success")))
    for i, sub in enumerate(task.subgoals):
        issues.extend(_predicate_issues(scene, sub, ("task", "subgoals", i)))
    issues.extend(_expert_issues(scene))
    return issues


def _expert_issues(scene: Scene) -> Iterator[Issue]:
    exp = scene.task.expert
    if exp is None:
        return
    objects = {o.name for o in scene.objects}
    targets = objects | fixture_bodies(scene) | fixture_sites(scene)
    drawers = {f.name for f in scene.fixtures if isinstance(f, DrawerSpec)}
    needs_object = exp.skill in ("pick_lift", "pick_place", "push")
    if needs_object and exp.object not in objects:
        yield ("task", "expert", "object"), (
            f"skill {exp.skill!r} needs 'object' naming one of the scene's objects ({_some(objects)})"
        )
    if exp.skill in ("pick_place", "push") and exp.target not in targets:
        yield ("task", "expert", "target"), (
            f"skill {exp.skill!r} needs 'target' naming an object, fixture or fixture site "
            f"({_some(targets)})"
        )
    if exp.skill in ("open_drawer", "close_drawer") and exp.fixture not in drawers:
        yield ("task", "expert", "fixture"), (
            f"skill {exp.skill!r} needs 'fixture' naming a drawer ({_some(drawers)})"
        )
