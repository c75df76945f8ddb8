"""Cross-reference checks a schema cannot express: names that must exist, files on disk."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ruamel.yaml.error import YAMLError

from metasim.errors import one_line as _one_line
from metasim.scene.background import background_issues
from metasim.scene.robots import RobotError, resolve_robot
from metasim.scene.schema import (
    DrawerSpec,
    Predicate,
    Scene,
)

Loc = tuple[int | str, ...]
Issue = tuple[Loc, str]


def fixture_bodies(scene: Scene) -> set[str]:
    """Body names the fixtures create (usable as region frames and supports)."""
    return {b for fx in scene.fixtures for b in fx.bodies()}


def fixture_sites(scene: Scene) -> set[str]:
    """Site names the fixtures create (usable as expert targets)."""
    return {site for fx in scene.fixtures for site in fx.sites()}


def joint_names(scene: Scene) -> set[str]:
    """Articulated joints by the names predicates may use (fixture name or full joint name)."""
    return {j for fx in scene.fixtures for j in fx.joints()}


def walk_predicates(pred: Predicate, loc: Loc) -> Iterator[tuple[Predicate, Loc]]:
    """Every predicate of the tree under `pred`, with its location."""
    yield pred, loc
    for where, child in pred.children():
        yield from walk_predicates(child, (*loc, *where))


def _predicate_issues(scene: Scene, pred: Predicate, loc: Loc) -> Iterator[Issue]:
    objects = {o.name for o in scene.objects}
    known = {
        "object": objects,
        "body": objects | fixture_bodies(scene),
        "joint": joint_names(scene),
    }
    for node, at in walk_predicates(pred, loc):
        for ref in node.references():
            names = known[ref.among]
            if ref.name not in names:
                yield (
                    (*at, *ref.loc),
                    f"names {ref.label}{ref.name!r}, which the scene does not have "
                    f"({_some(names)})",
                )


def _some(names: set[str]) -> str:
    if not names:
        return "it has none"
    return "it has " + ", ".join(sorted(names))


def check_references(scene: Scene, base_dir: Path, files: bool = True) -> list[Issue]:
    """Every dangling name or missing file in `scene`, with the field path that holds it.
    `files=False` (a prebuilt scene, whose meshes, textures and robot are in its saved
    model): the names and values only, and names may hold '/' or a reserved name (an
    imported benchmark's bodies, lights and cameras keep their MJCF names, e.g. LIBERO's
    'arena/light1', Meta-World's 'world' fixture; the saved model already holds them)."""
    issues: list[Issue] = []
    issues.extend(_name_issues(scene, authored=files))
    try:
        robot = resolve_robot(scene.robot.name, base_dir)
        if files and not robot.mjcf.is_file():
            raise RobotError(
                f"robot {robot.name}: its MJCF file {str(robot.mjcf)!r} does not exist"
            )
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
        issues.append((("robot", "name"), _one_line(str(exc))))
    except (KeyError, TypeError, ValueError, AttributeError, OSError, YAMLError) as exc:
        # A robot.yaml descriptor that is not what metasim expects (missing key, wrong type).
        what = f"missing key {exc}" if isinstance(exc, KeyError) else _one_line(str(exc))
        issues.append(
            (("robot", "name"), f"robot {scene.robot.name!r}: its descriptor is malformed ({what})")
        )

    materials = {m.name for m in scene.materials}
    for key, items in (("objects", scene.objects), ("fixtures", scene.fixtures)):
        for i, item in enumerate(items):
            mat = getattr(item, "material", None)
            if mat is not None and mat not in materials:
                issues.append(
                    (
                        (key, i, "material"),
                        f"names material {mat!r}, not defined ({_some(materials)})",
                    )
                )
    for i, mat in enumerate(scene.materials):
        if files and mat.texture and mat.texture.file:
            problem = _file_problem("texture", base_dir, mat.texture.file)
            if problem:
                issues.append((("materials", i, "texture", "file"), problem))

    fixture_names = {f.name for f in scene.fixtures}
    for i, ob in enumerate(scene.objects):
        if ob.name in fixture_names:
            issues.append((("objects", i, "name"), f"the name {ob.name!r} is also a fixture's"))
        for attr in ("mesh", "mjcf"):
            rel = getattr(ob, attr)
            if files and rel and ob.shape == attr:
                problem = _file_problem(attr, base_dir, rel, ob.scale)
                if problem:
                    issues.append((("objects", i, attr), problem))

    issues.extend(_shuffle_issues(scene))
    issues.extend(background_issues(scene, base_dir, files))
    task = scene.task
    dt = scene.physics.timestep
    if task.control_hz * dt > 1.0 + 1e-9:
        issues.append(
            (
                ("task", "control_hz"),
                f"one control step (1/{task.control_hz:g} = {1.0 / task.control_hz:g} s) is "
                f"shorter than physics.timestep ({dt:g} s); lower control_hz or the timestep",
            )
        )
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

    def need(key: str, value: str | None, what: str, names: set[str]) -> Iterator[Issue]:
        if value in names:
            return
        got = "it is not given" if value is None else f"the scene has no {value!r}"
        yield (
            ("task", "expert", key),
            (f"skill {exp.skill!r} needs {key!r} naming {what}; {got} ({_some(names)})"),
        )

    if exp.skill in ("pick_lift", "pick_place", "push"):
        yield from need("object", exp.object, "one of the scene's objects", objects)
    if exp.skill in ("pick_place", "push"):
        yield from need("target", exp.target, "an object, fixture or fixture site", targets)
    if exp.skill in ("open_drawer", "close_drawer"):
        yield from need("fixture", exp.fixture, "a drawer fixture", drawers)
    if exp.skill == "open_door":
        yield from need("fixture", exp.fixture, "a hinged door's body", fixture_bodies(scene))


# ---------------------------------------------------------------- names and files

# MuJoCo names metasim derives from the scene's names use '/': robot/<part> for the robot,
# <fixture>/slide, <fixture>/drawer, <object>/free, <object>/mesh, <material>/tex.
_RESERVED_BODIES = {"world": "MuJoCo's world body", "floor": "the floor plane"}


def _name_issues(scene: Scene, authored: bool = True) -> Iterator[Issue]:
    groups: list[tuple[str, list[Any]]] = [
        ("objects", list(scene.objects)),
        ("fixtures", list(scene.fixtures)),
        ("cameras", list(scene.cameras)),
        ("lights", list(scene.lights)),
        ("materials", list(scene.materials)),
    ]
    for key, items in groups:
        for i, item in enumerate(items):
            name = item.name
            where = (key, i, "name")
            if not name.strip():
                yield where, "expected a non-empty name"
            elif not authored:
                continue
            elif "/" in name:
                yield (
                    where,
                    (
                        f"the name {name!r} contains '/', which metasim reserves for the names it "
                        "derives (robot/..., <fixture>/slide, <object>/free)"
                    ),
                )
            elif key in ("objects", "fixtures") and name in _RESERVED_BODIES:
                yield where, f"the name {name!r} is reserved ({_RESERVED_BODIES[name]})"


def _file_problem(
    kind: str, base_dir: Path, rel: str, scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
) -> str | None:
    """Why the `kind` file `rel` (relative to the scene) cannot be used, or None."""
    path = base_dir / rel
    if not path.is_file():
        return f"file {rel!r} does not exist (relative to {base_dir})"
    stat = path.stat()
    problem = _mujoco_problem(kind, str(path.resolve()), stat.st_mtime_ns, stat.st_size, scale)
    return f"file {rel!r} does not load: {problem}" if problem else None


@functools.lru_cache(maxsize=256)
def _mujoco_problem(
    kind: str, path: str, mtime_ns: int, size: int, scale: tuple[float, float, float]
) -> str | None:
    """MuJoCo's complaint about one asset file on its own (cached while the file is unchanged)."""
    del mtime_ns, size  # part of the cache key only
    import mujoco

    try:
        if kind == "mjcf":
            mujoco.MjSpec.from_file(path).compile()
            return None
        spec = mujoco.MjSpec()
        if kind == "mesh":
            spec.add_mesh(name="probe", file=path, scale=list(scale))
        else:
            spec.add_texture(name="probe", type=mujoco.mjtTexture.mjTEXTURE_2D, file=path)
        spec.compile()
    except (ValueError, RuntimeError) as exc:
        lines = [ln for ln in str(exc).splitlines() if not ln.startswith("Element name 'probe'")]
        return _one_line("\n".join(lines))
    return None


def _shuffle_issues(scene: Scene) -> Iterator[Issue]:
    objects = {o.name for o in scene.objects}
    free = {o.name for o in scene.objects if o.free}
    for g, group in enumerate(scene.shuffle_positions):
        for i, name in enumerate(group):
            where: Loc = ("shuffle_positions", g, i)
            if name not in objects:
                yield (
                    where,
                    f"names object {name!r}, which the scene does not have ({_some(objects)})",
                )
            elif name not in free:
                yield where, f"object {name!r} is fixed (free: false), so it cannot be moved"
