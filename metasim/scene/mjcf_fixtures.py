"""Builders for fixtures and objects that come from MJCF files (`type: mjcf`, `type: site`,
objects with `mjcf_body`), as imported scenes such as LIBERO's use them.

A file's asset paths (meshes, textures) are made absolute before it is attached, so a
file keeps working wherever the scene lives.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco

from metasim.errors import MetasimInputError
from metasim.scene.fixtures import builder
from metasim.scene.schema import ObjectSpec
from metasim.scene.schema_libero import MjcfFixtureSpec, SiteFixtureSpec, TableResize


def load_mjcf(path: Path) -> mujoco.MjSpec:
    """An MjSpec of `path` with absolute asset paths, inertia from group-0 geoms only.
    Like robosuite's XML reader, it tolerates an asset name repeated with the same kind
    (the first one is kept)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise MetasimInputError(str(path), [f"MJCF does not load: {exc}"]) from None
    compiler = root.find("compiler")
    dirs = {
        "mesh": path.parent / (compiler.get("meshdir", "") if compiler is not None else ""),
        "texture": path.parent / (compiler.get("texturedir", "") if compiler is not None else ""),
        "hfield": path.parent,
    }
    if compiler is not None:
        compiler.attrib.pop("meshdir", None)
        compiler.attrib.pop("texturedir", None)
    for size in root.findall("size"):
        root.remove(size)  # memory sizes are the scene's, not a part's
    for asset in root.iter("asset"):
        seen: set[tuple[str, str]] = set()
        for el in list(asset):
            key = (el.tag, el.get("name", ""))
            if key[1] and key in seen:
                asset.remove(el)
                continue
            seen.add(key)
            if el.get("file") and el.tag in dirs:
                el.set("file", str((dirs[el.tag] / str(el.get("file"))).resolve()))
    try:
        spec = mujoco.MjSpec.from_string(ET.tostring(root, encoding="unicode"))
    except ValueError as exc:
        raise MetasimInputError(str(path), [f"MJCF does not load: {exc}"]) from None
    # robosuite's world reads every part in radians, and only collision geoms (group 0)
    # carry mass (its compiler: angle="radian" inertiagrouprange="0 0").
    spec.compiler.degree = False
    spec.compiler.inertiagrouprange = [0, 0]
    return spec


def _body_of(child: mujoco.MjSpec, name: str, path: Path) -> mujoco.MjsBody:
    body = child.body(name)
    if body is None:
        raise MetasimInputError(str(path), [f"has no body named {name!r}"])
    return body


def attach_body(
    spec: mujoco.MjSpec, path: Path, body: str, name: str, pos: list[float], quat: list[float]
) -> mujoco.MjsBody:
    """Attach body `body` of the file at `path` into the world as body `name` at pos/quat;
    names below it get the prefix `<name>_`."""
    child = load_mjcf(path)
    src = _body_of(child, body, path)
    src.pos = [0.0, 0.0, 0.0]
    src.quat = [1.0, 0.0, 0.0, 0.0]
    frame = spec.worldbody.add_frame(pos=pos, quat=quat)
    out = frame.attach_body(src, f"{name}_", "")
    out.name = name
    return out


def add_mjcf_object(spec: mujoco.MjSpec, ob: ObjectSpec, base_dir: Path) -> None:
    """An object whose free body is body `ob.mjcf_body` of `ob.mjcf` (free joint
    `<name>/free`, added after the body's own joints)."""
    path = (base_dir / str(ob.mjcf)).resolve()
    body = attach_body(spec, path, str(ob.mjcf_body), ob.name, list(ob.pos), list(ob.quat))
    if ob.free:
        add_free_joint(body, ob)


def add_free_joint(body: mujoco.MjsBody, ob: ObjectSpec) -> None:
    """The object's free joint `<name>/free`, with `ob.free_damping` on all six dofs."""
    joint = body.add_freejoint(name=f"{ob.name}/free")
    joint.damping = [ob.free_damping, 0.0, 0.0]  # MuJoCo 4: the linear coefficient first


@builder(MjcfFixtureSpec)
def _mjcf(spec: mujoco.MjSpec, fx: MjcfFixtureSpec, base_dir: Path) -> float | None:
    path = (base_dir / fx.file).resolve()  # absolute, or relative to the scene file
    if fx.body is not None:
        attach_body(spec, path, fx.body, fx.name, list(fx.pos), list(fx.quat))
        return None
    child = load_mjcf(path)
    if fx.table is not None:
        _resize_table(child, fx.table, path)
    if not fx.cameras:
        for cam in list(child.cameras):
            child.delete(cam)
    if not fx.lights:
        for light in list(child.lights):
            child.delete(light)
    _swap_textures(child, fx, path)
    frame = spec.worldbody.add_frame(pos=list(fx.pos), quat=list(fx.quat))
    spec.attach(child, prefix=fx.prefix, frame=frame)
    return None


def _swap_textures(child: mujoco.MjSpec, fx: MjcfFixtureSpec, path: Path) -> None:
    """Point the file's textures named in `fx.textures` at other image files."""
    for name, image in fx.textures.items():
        tex = child.texture(name)
        file = (path.parent / image).resolve()
        if tex is None or not file.is_file():
            known = sorted(t.name for t in child.textures if t.name)
            why = f"no texture {name!r} (it has {known})" if tex is None else f"no file {file}"
            raise MetasimInputError(f"fixture {fx.name!r}, textures", [f"{path.name}: {why}"])
        tex.file = str(file)


def mjcf_lights(path: Path, prefix: str = "") -> list[dict[str, object]]:
    """The lights at the top of the worldbody of the MJCF file at `path`, as `LightSpec`
    fields (names with `prefix`), so a scene can declare a file's lights as its own."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise MetasimInputError(str(path), [f"MJCF does not load: {exc}"]) from None

    def vec(el: ET.Element, key: str, default: str) -> tuple[float, ...]:
        return tuple(float(v) for v in (el.get(key) or default).split())

    out: list[dict[str, object]] = []
    for i, el in enumerate(root.findall("worldbody/light")):
        out.append(
            {"name": prefix + (el.get("name") or f"light{i}"), "pos": vec(el, "pos", "0 0 0"),
             "dir": vec(el, "dir", "0 0 -1"), "diffuse": vec(el, "diffuse", "0.7 0.7 0.7"),
             "ambient": vec(el, "ambient", "0 0 0"), "specular": vec(el, "specular", "0.3 0.3 0.3"),
             "directional": el.get("directional") == "true",
             "castshadow": el.get("castshadow", "true") == "true"}
        )  # fmt: skip
    return out


def _resize_table(child: mujoco.MjSpec, t: TableResize, path: Path) -> None:
    """robosuite TableArena: the top's half sizes and friction, its body at the offset
    minus half the thickness, legs of half length (z - half thickness) / 2, 0.1 m in from
    the corners."""
    body = _body_of(child, "table", path)
    hx, hy, hz = (s / 2 for s in t.full_size)
    body.pos = [t.offset[0], t.offset[1], t.offset[2] - hz]
    leg_half = (t.offset[2] - hz) / 2
    corners = [(1, 1), (-1, 1), (-1, -1), (1, -1)]
    for geom in body.geoms:
        if geom.name in ("table_collision", "table_visual"):
            geom.size = [hx, hy, hz]
            if geom.name == "table_collision":
                geom.friction = list(t.friction)
        elif geom.name.startswith("table_leg") and geom.name.endswith("_visual"):
            sx, sy = corners[int(geom.name[len("table_leg")]) - 1]
            geom.pos = [sx * (hx - 0.1), sy * (hy - 0.1), -leg_half]
            geom.size = [0.025, leg_half, 0.0]
    for site in body.sites:
        if site.name == "table_top":
            site.pos = [0.0, 0.0, hz]


@builder(SiteFixtureSpec)
def _site(spec: mujoco.MjSpec, fx: SiteFixtureSpec, base_dir: Path) -> float | None:
    parent = spec.worldbody if fx.body is None else spec.body(fx.body)
    if parent is None:
        raise MetasimInputError(fx.name, [f"site parent body {fx.body!r} does not exist"])
    parent.add_site(
        name=fx.name,
        type=mujoco.mjtGeom.mjGEOM_BOX,
        pos=list(fx.pos),
        quat=list(fx.quat),
        size=list(fx.size),
        rgba=list(fx.rgba),
    )
    return None
