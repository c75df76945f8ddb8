"""Builders of LIBERO's fixture kinds (`type: mjcf`: a part of an MJCF file, robosuite's
table resized as its TableArena does; `type: site`: a box site, e.g. a goal region),
registered with the core's fixture builders (metasim.scene.fixtures)."""

from __future__ import annotations

from pathlib import Path

import mujoco

from metasim.errors import MetasimInputError
from metasim.libero.kinds.models import MjcfFixtureSpec, SiteFixtureSpec, TableResize
from metasim.scene.fixtures import builder
from metasim.scene.mjcf_fixtures import attach_body, body_of, load_mjcf


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


def _resize_table(child: mujoco.MjSpec, t: TableResize, path: Path) -> None:
    """robosuite TableArena: the top's half sizes and friction, its body at the offset
    minus half the thickness, legs of half length (z - half thickness) / 2, 0.1 m in from
    the corners."""
    body = body_of(child, "table", path)
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
