"""Parts of a scene that come from MJCF files: loading a file, attaching one of its bodies
(objects with `mjcf_body`; fixture kinds of benchmark packages build on these), reading
its lights.

A file's asset paths (meshes, textures) are made absolute before it is attached, so a
file keeps working wherever the scene lives.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco

from metasim.errors import MetasimInputError
from metasim.scene.schema import ObjectSpec


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


def body_of(child: mujoco.MjSpec, name: str, path: Path) -> mujoco.MjsBody:
    """Body `name` of `child` (the file at `path`); an input error naming the file if none."""
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
    src = body_of(child, body, path)
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
