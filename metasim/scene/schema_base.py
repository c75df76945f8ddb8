"""Building blocks of the scene schema: strict models, vectors, quaternions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)
from pydantic.functional_validators import AfterValidator
from pydantic_core import PydanticCustomError

if TYPE_CHECKING:
    import numpy as np

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
RGBA = tuple[float, float, float, float]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]


class Strict(BaseModel):
    """Base model: unknown keys are errors, values are not coerced silently."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _unit_quat(q: Quat) -> Quat:
    norm = sum(c * c for c in q) ** 0.5
    if norm < 1e-9:
        raise PydanticCustomError("zero_quat", "a quaternion (w, x, y, z) must not be all zeros")
    return q


UnitQuat = Annotated[Quat, AfterValidator(_unit_quat)]


class FixtureBase(Strict):
    """What every fixture kind declares: the names it creates in the compiled scene
    (bodies usable as region frames and supports, sites usable as expert targets, joints
    by the names predicates may use) and whether its root body is re-placed at every reset.
    One subclass per kind, registered with `@FIXTURE_KINDS.register(<its type>)`
    (metasim.scene.kinds), its builder with `@builder(<model>)` (metasim.scene.fixtures)."""

    name: str

    def bodies(self) -> tuple[str, ...]:
        return (self.name,)

    def sites(self) -> tuple[str, ...]:
        return ()

    def joints(self) -> tuple[str, ...]:
        return ()

    def placed(self) -> bool:
        """Whether the root body is re-placed at every reset (`draw_pose`); most kinds stay
        where they are compiled."""
        return False

    def nominal_pose(self) -> tuple[Vec3, Quat]:
        """(pos, quat w first) of the root body in the compiled model (placed kinds)."""
        raise NotImplementedError(f"fixture kind {type(self).__name__} is not placed at reset")

    def episode_pose(self, episode: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Episode `episode`'s given pose of the root body (pos (3,), quat (4,) w first),
        or None when it is drawn from the episode's seed (`draw_pose`)."""
        return None

    def draw_pose(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """One reset pose of the root body drawn from `rng`: (pos (3,), quat (4,) w first)
        in the world (placed kinds; the root is a child of the world)."""
        raise NotImplementedError(f"fixture kind {type(self).__name__} is not placed at reset")
