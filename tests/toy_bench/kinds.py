"""A toy benchmark's kinds, registered from outside the metasim package (importing this
module registers them, as a benchmark package's `__init__` would):

- fixture kind `toy_pad`: a flat, non-colliding square pad with a site at its centre,
  re-placed at every reset within `jitter` of `pos` in x and y when `jitter` > 0;
- predicate kind `toy_near`: the origin of `object` within `radius` of the origin of body
  `target` in x-y.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import mujoco
import numpy as np

from metasim.scene.compile import CompiledScene
from metasim.scene.fixtures import builder
from metasim.scene.kinds import FIXTURE_KINDS, PREDICATE_KINDS
from metasim.scene.predicate_base import PredicateBase, Ref
from metasim.scene.schema_base import (
    RGBA,
    FixtureBase,
    NonNegFloat,
    PositiveFloat,
    Quat,
    Strict,
    Vec3,
)
from metasim.tasks.predicates import PredFn, TaskView, predicate

IDENTITY: Quat = (1.0, 0.0, 0.0, 0.0)


@FIXTURE_KINDS.register("toy_pad")
class ToyPadSpec(FixtureBase):
    """A square pad of half side `half_size` lying on the surface at `pos`."""

    type: Literal["toy_pad"]
    name: str
    pos: Vec3 = (0.5, 0.0, 0.0)
    half_size: PositiveFloat = 0.05
    rgba: RGBA = (0.2, 0.4, 0.9, 1.0)
    jitter: NonNegFloat = 0.0

    def sites(self) -> tuple[str, ...]:
        return (f"{self.name}/center",)

    def placed(self) -> bool:
        return self.jitter > 0

    def nominal_pose(self) -> tuple[Vec3, Quat]:
        return self.pos, IDENTITY

    def draw_pose(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """`pos` moved by a uniform x-y offset in [-jitter, jitter]^2; never turned."""
        off = rng.uniform(-self.jitter, self.jitter, size=2)
        pos = np.array([self.pos[0] + off[0], self.pos[1] + off[1], self.pos[2]])
        return pos, np.array(IDENTITY)


@builder(ToyPadSpec)
def _pad(spec: mujoco.MjSpec, fx: ToyPadSpec, base_dir: Path) -> None:
    body = spec.worldbody.add_body(name=fx.name, pos=list(fx.pos))
    body.add_geom(
        name=f"{fx.name}/patch",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        pos=[0.0, 0.0, 0.001],
        size=[fx.half_size, fx.half_size, 0.001],
        rgba=list(fx.rgba),
        contype=0,
        conaffinity=0,
    )
    body.add_site(name=f"{fx.name}/center", pos=[0.0, 0.0, 0.002], size=[0.005] * 3)


class ToyNearArgs(Strict):
    object: str
    target: str
    radius: PositiveFloat = 0.05


@PREDICATE_KINDS.register("toy_near")
class ToyNear(PredicateBase):
    toy_near: ToyNearArgs

    def references(self) -> list[Ref]:
        a = self.toy_near
        return [
            Ref(("toy_near", "object"), "object", "object ", a.object),
            Ref(("toy_near", "target"), "body", "body ", a.target),
        ]


def near(pos_a: np.ndarray, pos_b: np.ndarray, radius: float) -> np.ndarray:
    """(B,) bool: pos_a, pos_b (B, 3) less than `radius` apart in x-y."""
    return np.linalg.norm(pos_a[:, :2] - pos_b[:, :2], axis=-1) < radius


@predicate(ToyNear)
def _toy_near(node: ToyNear, c: CompiledScene) -> PredFn:
    args = node.toy_near
    a, b = c.index.bodies[args.object], c.index.bodies[args.target]

    def fn(v: TaskView) -> np.ndarray:
        return near(v.kin.body_pos[:, a], v.kin.body_pos[:, b], args.radius)

    return fn
