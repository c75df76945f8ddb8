"""The schema models of LIBERO's kinds (see docs/libero.md), registered with the scene
schema's open kinds (metasim.scene.kinds): predicate kinds LIBERO's BDDL goals need, and
fixture kinds its scenes are made of (a part of an MJCF file, a box site).

They state LIBERO's own checks (libero/libero/envs/object_states, predicates, objects):
- `resting_on`: object A on object B: B's body origin is not above A's, the two touch,
  and their origins are less than `xy_radius` apart horizontally (LIBERO's `On` on objects).
- `site_on`: an object's origin inside a site's box footprint, between the site's top
  face (minus 5 mm) and `height` above it, in the site frame; optionally touching body
  `contact` (LIBERO's `On` on a region).
- `site_in`: an object's origin inside a site's box rotated into the world (the box's
  bottom lowered by 1 cm) (LIBERO's `In`).
- `joint_value`: a joint's position above and/or below a threshold (LIBERO's `Open`,
  `Close`, `TurnOn`, `TurnOff` are any/all of these over a fixture's joints).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from metasim.scene.kinds import FIXTURE_KINDS, PREDICATE_KINDS
from metasim.scene.predicate_base import PredicateBase, Ref
from metasim.scene.schema_base import FixtureBase, NonNegFloat, PositiveFloat, Quat, Strict, Vec3


class RestingOnArgs(Strict):
    object: str
    support: str
    xy_radius: PositiveFloat = 0.03


class SiteOnArgs(Strict):
    object: str
    site: str
    height: PositiveFloat = 0.10
    contact: str | None = None


class SiteInArgs(Strict):
    object: str
    site: str
    z_slack: NonNegFloat = 0.01


class JointValueArgs(Strict):
    """`above`/`below`: strict bounds unless `inclusive`; at least one is given."""

    joint: str
    above: float | None = None
    below: float | None = None
    inclusive: bool = False

    @model_validator(mode="after")
    def _bound(self) -> JointValueArgs:
        if self.above is None and self.below is None:
            raise PydanticCustomError("joint_bound", "joint_value needs 'above' or 'below'")
        return self


@PREDICATE_KINDS.register("resting_on")
class RestingOn(PredicateBase):
    resting_on: RestingOnArgs

    def references(self) -> list[Ref]:
        return [Ref(("resting_on", "object"), "object", "object ", self.resting_on.object)]

    def uses_contacts(self) -> bool:
        return True


@PREDICATE_KINDS.register("site_on")
class SiteOn(PredicateBase):
    site_on: SiteOnArgs

    def references(self) -> list[Ref]:
        return [Ref(("site_on", "object"), "object", "object ", self.site_on.object)]

    def uses_contacts(self) -> bool:
        return self.site_on.contact is not None


@PREDICATE_KINDS.register("site_in")
class SiteIn(PredicateBase):
    site_in: SiteInArgs

    def references(self) -> list[Ref]:
        return [Ref(("site_in", "object"), "object", "object ", self.site_in.object)]


@PREDICATE_KINDS.register("joint_value")
class JointValue(PredicateBase):
    joint_value: JointValueArgs


# ---------------------------------------------------------------- MJCF fixtures and sites


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


@FIXTURE_KINDS.register("site")
class SiteFixtureSpec(FixtureBase):
    """A box site (no geometry) on body `body` (the world when None), e.g. a goal region."""

    type: Literal["site"]
    name: str
    body: str | None = None
    pos: Vec3 = (0.0, 0.0, 0.0)
    quat: Quat = (1.0, 0.0, 0.0, 0.0)
    size: tuple[PositiveFloat, PositiveFloat, PositiveFloat]
    rgba: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 0.0)

    def bodies(self) -> tuple[str, ...]:
        return ()

    def sites(self) -> tuple[str, ...]:
        return (self.name,)
