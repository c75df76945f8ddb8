"""Fixture builders: table, drawer cabinet, bin and goal marker, added to an MjSpec.

All geometry is boxes so MJX collides it cheaply. Each builder adds bodies named after
the fixture; `build` dispatches through `FIXTURE_BUILDERS`, keyed by the fixture's
`type`, where a benchmark package's fixture kinds register their builders too
(`@builder(<model>)`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import mujoco

from metasim.registry import Registry
from metasim.rotations import yaw_quat
from metasim.scene.kinds import fixture_name
from metasim.scene.schema import BinSpec, DrawerSpec, MarkerSpec, TableSpec

BOX = mujoco.mjtGeom.mjGEOM_BOX
Builder = Callable[[mujoco.MjSpec, Any, Path], float | None]  # (spec, fixture, base_dir)
FIXTURE_BUILDERS: Registry[Builder] = Registry("fixture builder")


def builder(kind: type) -> Callable[[Builder], Builder]:
    """Register the decorated function as the builder of fixture kind `kind` (a model
    registered in `FIXTURE_KINDS`), under its `type`."""
    return FIXTURE_BUILDERS.register(fixture_name(kind))


def build(spec: mujoco.MjSpec, fixture: Any, base_dir: Path) -> float | None:
    """Add `fixture` to `spec` (a file it names is relative to `base_dir`, the scene
    file's folder); return the floor height it implies (tables), else None."""
    kind = fixture_name(type(fixture))
    fn = FIXTURE_BUILDERS.get(kind)
    if fn is None:
        raise LookupError(f"fixture kind {kind!r} has no builder: register one with @builder")
    return fn(spec, fixture, base_dir)


def _box(
    body: Any,
    name: str,
    pos: list[float],
    half: list[float],
    rgba: Any,
    material: str | None,
    collide: bool = True,
    **kw: Any,
) -> Any:
    geom = body.add_geom(
        name=name,
        type=BOX,
        pos=pos,
        size=half,
        contype=int(collide),
        conaffinity=int(collide),
        **kw,
    )
    if material:
        geom.material = material
    else:
        geom.rgba = list(rgba)
    return geom


@builder(TableSpec)
def _table(spec: mujoco.MjSpec, fx: TableSpec, base_dir: Path) -> float:
    hx, hy = fx.half_size
    top = fx.height
    body = spec.worldbody.add_body(name=fx.name, pos=[fx.pos[0], fx.pos[1], top - fx.thickness / 2])
    rgba = fx.rgba or (0.62, 0.5, 0.38, 1.0)
    _box(
        body,
        f"{fx.name}/top",
        [0, 0, 0],
        [hx, hy, fx.thickness / 2],
        rgba,
        fx.material,
        friction=list(fx.friction),
    )
    leg_half = fx.leg_length / 2
    for i, (sx, sy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))):
        _box(
            body,
            f"{fx.name}/leg{i}",
            [sx * (hx - 0.04), sy * (hy - 0.04), -fx.thickness / 2 - leg_half],
            [0.025, 0.025, leg_half],
            (0.3, 0.3, 0.3, 1),
            None,
            collide=False,
        )
    return top - fx.thickness - fx.leg_length


@builder(DrawerSpec)
def _drawer(spec: mujoco.MjSpec, fx: DrawerSpec, base_dir: Path) -> None:
    depth, width, height = fx.outer
    t = 0.01
    dx, wy, hz = depth / 2, width / 2, height
    cab = spec.worldbody.add_body(name=fx.name, pos=list(fx.pos), quat=list(yaw_quat(fx.yaw)))
    rgba, mat = fx.rgba, fx.material
    _box(cab, f"{fx.name}/bottom", [0, 0, t / 2], [dx, wy, t / 2], rgba, mat)
    _box(cab, f"{fx.name}/top", [0, 0, hz - t / 2], [dx, wy, t / 2], rgba, mat)
    _box(cab, f"{fx.name}/left", [0, wy - t / 2, hz / 2], [dx, t / 2, hz / 2], rgba, mat)
    _box(cab, f"{fx.name}/right", [0, -wy + t / 2, hz / 2], [dx, t / 2, hz / 2], rgba, mat)
    _box(cab, f"{fx.name}/back", [dx - t / 2, 0, hz / 2], [t / 2, wy, hz / 2], rgba, mat)

    drawer = cab.add_body(name=f"{fx.name}/drawer")
    drawer.add_joint(
        name=f"{fx.name}/slide",
        type=mujoco.mjtJoint.mjJNT_SLIDE,
        axis=[-1, 0, 0],
        range=[0, fx.travel],
        damping=fx.damping,
        frictionloss=0.5,
        armature=0.05,
    )
    front = (0.8, 0.7, 0.55, 1.0)
    inner_w = wy - t - 0.004  # clearance to the cabinet's side walls
    inner_d = dx - t - 0.004
    floor_z = t + 0.004
    wall_h = (hz - 2 * t - 0.03) / 2
    dens: dict[str, Any] = {"density": 300.0}
    _box(
        drawer,
        f"{fx.name}/front",
        [-dx + t / 2, 0, hz / 2],
        [t / 2, wy - 0.002, hz / 2 - 0.002],
        front,
        mat,
        **dens,
    )
    _box(
        drawer,
        f"{fx.name}/floor",
        [0, 0, floor_z + t / 2],
        [inner_d, inner_w, t / 2],
        front,
        mat,
        **dens,
    )
    _box(
        drawer,
        f"{fx.name}/dleft",
        [0, inner_w - t / 2, floor_z + wall_h],
        [inner_d, t / 2, wall_h],
        front,
        mat,
        **dens,
    )
    _box(
        drawer,
        f"{fx.name}/dright",
        [0, -inner_w + t / 2, floor_z + wall_h],
        [inner_d, t / 2, wall_h],
        front,
        mat,
        **dens,
    )
    _box(
        drawer,
        f"{fx.name}/dback",
        [inner_d - t / 2, 0, floor_z + wall_h],
        [t / 2, inner_w, wall_h],
        front,
        mat,
        **dens,
    )
    # Handle: a tab sticking out of the front with an end cap, so fingers that close on
    # the tab behind the cap can pull without relying on friction alone.
    tab_len, tab_z = 0.05, hz - 0.035
    grey = (0.25, 0.25, 0.27, 1.0)
    _box(
        drawer,
        f"{fx.name}/tab",
        [-dx - tab_len / 2, 0, tab_z],
        [tab_len / 2, 0.009, 0.009],
        grey,
        None,
        **dens,
    )
    _box(
        drawer,
        f"{fx.name}/cap",
        [-dx - tab_len - 0.007, 0, tab_z],
        [0.007, 0.028, 0.013],
        grey,
        None,
        **dens,
    )
    drawer.add_site(
        name=f"{fx.name}/handle", pos=[-dx - tab_len * 0.55, 0, tab_z], size=[0.005] * 3
    )
    drawer.add_site(name=f"{fx.name}/inside", pos=[0, 0, floor_z + t], size=[0.005] * 3)
    spec.add_exclude(bodyname1=fx.name, bodyname2=f"{fx.name}/drawer")


@builder(BinSpec)
def _bin(spec: mujoco.MjSpec, fx: BinSpec, base_dir: Path) -> None:
    hx, hy, hz = fx.half_size
    w = fx.wall
    body = spec.worldbody.add_body(name=fx.name, pos=list(fx.pos))
    rgba, mat = fx.rgba, fx.material
    _box(body, f"{fx.name}/floor", [0, 0, w / 2], [hx + w, hy + w, w / 2], rgba, mat)
    wall_z = w + hz
    _box(body, f"{fx.name}/wx0", [hx + w / 2, 0, wall_z], [w / 2, hy + w, hz], rgba, mat)
    _box(body, f"{fx.name}/wx1", [-hx - w / 2, 0, wall_z], [w / 2, hy + w, hz], rgba, mat)
    _box(body, f"{fx.name}/wy0", [0, hy + w / 2, wall_z], [hx, w / 2, hz], rgba, mat)
    _box(body, f"{fx.name}/wy1", [0, -hy - w / 2, wall_z], [hx, w / 2, hz], rgba, mat)


@builder(MarkerSpec)
def _marker(spec: mujoco.MjSpec, fx: MarkerSpec, base_dir: Path) -> None:
    body = spec.worldbody.add_body(name=fx.name, pos=list(fx.pos))
    _box(
        body,
        f"{fx.name}/patch",
        [0, 0, 0.0005],
        [fx.half_size[0], fx.half_size[1], 0.0005],
        fx.rgba,
        None,
        collide=False,
    )
