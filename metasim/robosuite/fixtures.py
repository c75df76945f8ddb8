"""robosuite's fixture kind `type: mjcf`: a part of an MJCF file placed in a scene, the
arena (floor, walls, lights) or one body's subtree, with robosuite's TableArena resize of
a body named `table` and, for LIBERO's scenes built on it, a placement drawn at every
reset. Registered with the scene schema's open kinds (metasim.scene.kinds) and the core's
fixture builders (metasim.scene.fixtures) when imported."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import mujoco
import numpy as np
from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from metasim.errors import MetasimInputError
from metasim.scene.fixtures import builder
from metasim.scene.kinds import FIXTURE_KINDS
from metasim.scene.mjcf_fixtures import attach_body, body_of, load_mjcf
from metasim.scene.schema_base import FixtureBase, PositiveFloat, Quat, Strict, Vec3


class TableResize(Strict):
    """robosuite's TableArena edits of a body named `table`: top of `full_size` (x, y,
    thickness) whose upper face is at `offset` (x, y, z), four legs down to z = 0."""

    full_size: tuple[PositiveFloat, PositiveFloat, PositiveFloat]
    offset: Vec3
    friction: Vec3 = (0.6, 0.005, 0.0001)


class FixturePlacement(Strict):
    """Where a fixture's root body is put at every reset (LIBERO's fixture sampler,
    `MultiRegionRandomSampler` without rejection): one of `regions` (world-frame x-y
    rectangles (x0, y0, x1, y1)) chosen with equal odds, x and y uniform inside it, yaw
    uniform in [yaw_low, yaw_high] about z; z stays the fixture's `pos` z. Drawn per
    episode seed (`metasim.tasks.fixture_placement`); the fixture's `pos`/`quat` is the
    nominal pose the model is compiled with."""

    regions: list[tuple[float, float, float, float]] = Field(min_length=1)
    yaw_low: float = 0.0
    yaw_high: float = 0.0
    episodes: list[tuple[float, float, float]] = Field(default_factory=list)
    """A harness's draws (`metasim.libero.harness_draw`): episode k's world (x, y, yaw) is
    `episodes[k]` (k < len); empty: every episode draws from its seed."""

    @model_validator(mode="after")
    def _ordered(self) -> FixturePlacement:
        if any(x0 > x1 or y0 > y1 for x0, y0, x1, y1 in self.regions):
            raise PydanticCustomError("range_order", "each region needs x0 <= x1 and y0 <= y1")
        if self.yaw_low > self.yaw_high:
            raise PydanticCustomError("range_order", "yaw_low must be <= yaw_high")
        return self

    def draw(self, z: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """One draw of LIBERO's fixture sampler: a rectangle with equal odds, x then y
        uniform in it, then the yaw; (pos (3,) at height `z`, quat (4,) = yaw about z, w
        first)."""
        x0, y0, x1, y1 = self.regions[int(rng.integers(len(self.regions)))]
        x, y = rng.uniform(x0, x1), rng.uniform(y0, y1)
        yaw = rng.uniform(self.yaw_low, self.yaw_high)
        quat = np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
        return np.array([x, y, z]), quat


@FIXTURE_KINDS.register("mjcf")
class MjcfFixtureSpec(FixtureBase):
    """A fixture from an MJCF file (absolute, or relative to the scene file). `body`: the
    body of the file to take (its subtree, placed at `pos`/`quat` and renamed `name`);
    None takes the whole worldbody at the origin (an arena: floor, walls, lights). Names
    inside get `prefix`. Joints inside stay (articulated fixtures); nothing is free."""

    type: Literal["mjcf"]
    name: str
    file: str
    body: str | None = None
    prefix: str = ""
    pos: Vec3 = (0.0, 0.0, 0.0)
    quat: Quat = (1.0, 0.0, 0.0, 0.0)
    table: TableResize | None = None
    cameras: bool = True
    """False drops the file's cameras (the scene declares its own)."""
    lights: bool = True
    """False drops the file's lights (the scene declares them in `lights`, where the light
    perturbation axes reach them)."""
    textures: dict[str, str] = Field(default_factory=dict)
    """Texture name in the file -> an image file that replaces its `file` (absolute, or
    relative to the MJCF file's folder): how a background texture is swapped."""
    placement: FixturePlacement | None = None
    """With `body`: re-place the fixture at every reset (None: it stays at `pos`)."""

    def placed(self) -> bool:
        return self.placement is not None

    def nominal_pose(self) -> tuple[Vec3, Quat]:
        return self.pos, self.quat

    def episode_pose(self, episode: int) -> tuple[np.ndarray, np.ndarray] | None:
        if self.placement is None or not self.placement.episodes:
            return None
        x, y, yaw = self.placement.episodes[episode % len(self.placement.episodes)]
        quat = np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
        return np.array([x, y, self.pos[2]]), quat

    def draw_pose(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        if self.placement is None:
            return super().draw_pose(rng)
        return self.placement.draw(self.pos[2], rng)


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
