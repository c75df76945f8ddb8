"""The schema models of LIBERO's kinds (see docs/libero.md), registered with the scene
schema's open kinds (metasim.scene.kinds): predicate kinds LIBERO's BDDL goals need, and
fixture kinds its scenes are made of (a box site; the part of an MJCF file, `type: mjcf`,
is robosuite's: metasim.robosuite.fixtures).

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

from typing import Literal

from pydantic import model_validator
from pydantic_core import PydanticCustomError

from metasim.robosuite import fixtures as _mjcf_kind  # noqa: F401  (`mjcf`, before `site`)
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


# ---------------------------------------------------------------- sites


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
