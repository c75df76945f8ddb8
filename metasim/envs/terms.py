"""The observation terms of the vector env: one registry, `OBS_TERMS`, iterated (in
registration order) by everything that needs the vocabulary (the env's spaces and
observations, state noise, a policy's state parts). A benchmark package adds a term with
`OBS_TERMS.register(name, ObsTerm(...))`.

Each term has its group (`policy`: what a policy may see; `privileged`: simulator state
for scripted experts and critics), its per-env shape, its reader from the batched
kinematics, its bounds and whether state noise (`state_noise`) applies to it.
Camera images (`<view>_rgb`, `<view>_depth`) are added per declared view.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Literal

import numpy as np

from metasim.control.actions import as_slice
from metasim.rotations import RowWeights, rows_times
from metasim.scene.compile import CompiledScene
from metasim.scene.kinds import OrderedRegistry
from metasim.sim.base import Kinematics


def scene_parts(compiled: CompiledScene) -> tuple[tuple[str, ...], ...]:
    """(object names, fixture bodies, fixture sites) of a compiled scene, in index order."""
    idx = compiled.index
    skip = {"world", *idx.object_names}
    bodies = tuple(n for n in idx.bodies if n not in skip and not n.startswith("robot/"))
    sites = tuple(n for n in idx.sites if not n.startswith("robot/"))
    return tuple(idx.object_names), bodies, sites


@dataclass(frozen=True)
class Layout:
    """Where the terms read from: the compiled scene's indices and the env's fixture
    bodies and sites (see `scene_parts`)."""

    compiled: CompiledScene
    fixture_body_ids: np.ndarray
    fixture_site_ids: np.ndarray

    @property
    def n_arm(self) -> int:
        return len(self.compiled.index.arm_qpos)


@dataclass(frozen=True)
class ObsTerm:
    """One observation term: (B, *shape(layout)) float64 read from the kinematics.

    Most terms are a gather: `source` names a `Kinematics` field and `index(layout)` the
    entries of its second axis to take (a copy). The others compute their value: `make`
    builds their reader for a layout."""

    group: Literal["policy", "privileged"]
    shape: Callable[[Layout], tuple[int, ...]]
    make: Callable[[Layout], Callable[[Kinematics], np.ndarray]] | None = None
    noise: bool = False  # state_noise perturbs it
    low: float = -np.inf
    high: float = np.inf
    source: str | None = None
    index: Callable[[Layout], np.ndarray | int] | None = None
    # Whether the term exists in a scene (a benchmark's own terms exist only in its scenes)
    applies: Callable[[Layout], bool] = lambda layout: True
    # Its reader in an episode's first observation (the one reset returns), where that is
    # not the reset state's value (a benchmark whose reset reports a stale frame)
    reset: Callable[[Layout], Callable[[Kinematics], np.ndarray]] | None = None

    def reader(self, layout: Layout) -> Callable[[Kinematics], np.ndarray]:
        """The term's reader for one layout, its indices resolved once (a run of
        consecutive indices becomes a slice: a view plus one copy, no gather)."""
        if self.make is not None:
            return self.make(layout)
        assert self.source is not None and self.index is not None
        field, index = attrgetter(self.source), as_slice(self.index(layout))
        return lambda kin: field(kin)[:, index].copy()


def gripper_opening(layout: Layout) -> Callable[[Kinematics], np.ndarray]:
    """Reader of the (B, 1) finger opening in [0, 1], 1 = open (always open without a
    gripper)."""
    idx = layout.compiled.index
    grip = layout.compiled.robot.gripper
    if grip is None or not len(idx.gripper_qpos):
        return lambda kin: np.ones((kin.qpos.shape[0], 1))
    fingers, scale = as_slice(idx.gripper_qpos), 1.0 / grip.max_width

    def read(kin: Kinematics) -> np.ndarray:
        opening = np.add.reduce(np.abs(kin.qpos[:, fingers]), axis=1, keepdims=True)
        opening *= scale
        return np.minimum(np.maximum(opening, 0.0), 1.0)

    return read


def site_quat(layout: Layout, site: int) -> Callable[[Kinematics], np.ndarray]:
    """Reader of the (B, 4) orientation (w, x, y, z; w >= 0) of site `site`: its body's
    quaternion times the site's fixed one, as MuJoCo composes the site frame, written as
    one product with the (4, 4) matrix of right-multiplication by the site's quaternion."""
    m = layout.compiled.model
    body = int(m.site_bodyid[site])
    w, x, y, z = np.asarray(m.site_quat[site], dtype=np.float64)
    right = RowWeights(np.array([[w, x, y, z], [-x, w, -z, y], [-y, z, w, -x], [-z, -y, x, w]]))

    def read(kin: Kinematics) -> np.ndarray:
        q = rows_times(kin.body_quat[:, body], right)
        q *= np.where(q[:, :1] < 0, -1.0, 1.0)
        return np.asarray(q)

    return read


OBS_TERMS: OrderedRegistry[ObsTerm] = OrderedRegistry("observation term")

OBS_TERMS.register(
    "joint_pos",
    ObsTerm(
        "policy",
        lambda lay: (lay.n_arm,),
        source="qpos",
        index=lambda lay: lay.compiled.index.arm_qpos,
        noise=True,
    ),
)

OBS_TERMS.register(
    "joint_vel",
    ObsTerm(
        "policy",
        lambda lay: (lay.n_arm,),
        source="qvel",
        index=lambda lay: lay.compiled.index.arm_dof,
    ),
)

OBS_TERMS.register(
    "gripper", ObsTerm("policy", lambda lay: (1,), make=gripper_opening, low=0.0, high=1.0)
)

OBS_TERMS.register(
    "ee_pos",
    ObsTerm(
        "policy",
        lambda lay: (3,),
        source="site_pos",
        index=lambda lay: lay.compiled.index.ee_site,
        noise=True,
    ),
)

# (w, x, y, z) of the grasp site
OBS_TERMS.register(
    "ee_quat",
    ObsTerm(
        "policy", lambda lay: (4,), make=lambda lay: site_quat(lay, lay.compiled.index.ee_site)
    ),
)

# (w, x, y, z) of the hand body, as MuJoCo computes it (no sign fix)
OBS_TERMS.register(
    "hand_quat",
    ObsTerm(
        "policy",
        lambda lay: (4,),
        source="body_quat",
        index=lambda lay: lay.compiled.index.hand_body,
    ),
)

# the finger joints' positions (m), as LIBERO's state has them
OBS_TERMS.register(
    "gripper_qpos",
    ObsTerm(
        "policy",
        lambda lay: (len(lay.compiled.index.gripper_qpos),),
        source="qpos",
        index=lambda lay: lay.compiled.index.gripper_qpos,
    ),
)

OBS_TERMS.register(
    "object_pos",
    ObsTerm(
        "privileged",
        lambda lay: (len(lay.compiled.index.object_names), 3),
        source="body_pos",
        index=lambda lay: lay.compiled.index.object_body,
        noise=True,
    ),
)

OBS_TERMS.register(
    "object_quat",
    ObsTerm(
        "privileged",
        lambda lay: (len(lay.compiled.index.object_names), 4),
        source="body_quat",
        index=lambda lay: lay.compiled.index.object_body,
    ),
)

OBS_TERMS.register(
    "fixture_qpos",
    ObsTerm(
        "privileged",
        lambda lay: (len(lay.compiled.index.joint_qpos),),
        source="qpos",
        index=lambda lay: lay.compiled.index.joint_qpos,
    ),
)

OBS_TERMS.register(
    "fixture_body_pos",
    ObsTerm(
        "privileged",
        lambda lay: (len(lay.fixture_body_ids), 3),
        source="body_pos",
        index=lambda lay: lay.fixture_body_ids,
    ),
)

OBS_TERMS.register(
    "fixture_site_pos",
    ObsTerm(
        "privileged",
        lambda lay: (len(lay.fixture_site_ids), 3),
        source="site_pos",
        index=lambda lay: lay.fixture_site_ids,
        noise=True,
    ),
)


def policy_terms() -> tuple[str, ...]:
    """The names of the `policy` group's terms (what a policy's state may be made of)."""
    return tuple(k for k, t in OBS_TERMS.in_order() if t.group == "policy")


def terms_of(layout: Layout) -> list[tuple[str, ObsTerm]]:
    """The terms that exist in the scene of `layout`, in registration order."""
    return [(k, t) for k, t in OBS_TERMS.in_order() if t.applies(layout)]


def group_reader(
    group: str, layout: Layout
) -> Callable[[Kinematics, np.ndarray | None], dict[str, np.ndarray]]:
    """Reads every term of `group`, (B, *shape) each, in registration order; the terms'
    indices are resolved once, here (this runs every control step). The reader's second
    argument, `fresh` (B,) bool or None, marks the envs whose observation is the one
    their reset returns: there a term with a `reset` reader takes that reader's value."""
    terms = [(k, t) for k, t in terms_of(layout) if t.group == group]
    readers = [(k, t.reader(layout)) for k, t in terms]
    resets = [(k, t.reset(layout)) for k, t in terms if t.reset is not None]

    def read(kin: Kinematics, fresh: np.ndarray | None) -> dict[str, np.ndarray]:
        out = {k: get(kin) for k, get in readers}
        if fresh is not None and resets and fresh.any():
            for k, at_reset in resets:
                out[k][fresh] = at_reset(kin)[fresh]
        return out

    return read
