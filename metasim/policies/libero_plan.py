"""What the LIBERO expert plans from: the pick-and-place goal of a task, and the grasp and
place geometry it reads from the model and the privileged observation.

A goal the expert can solve is one atom (`site_in`, `site_on` or `resting_on`; a
conjunction of one) moving one object onto or into a target: every libero_spatial and
libero_object task. Heights come from the objects' collision boxes (`body_extent`), not
their body origins, which LIBERO's models put anywhere (a can's origin is its centre, a
bowl's its bottom).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import mujoco
import numpy as np

from metasim.errors import MetasimInputError
from metasim.policies.base import PolicyContext
from metasim.rotations import quat_to_mat
from metasim.scene.schema import AllOf
from metasim.scene.schema_libero import RestingOn, SiteIn, SiteOn
from metasim.tasks.predicates import body_extent

Mode = Literal["resting_on", "site_on", "site_in"]
GRIPPER_SPAN = 0.074  # widest object side the open Panda gripper (8 cm) closes on, with margin
FINGER_BELOW = 0.0135  # the fingers' lowest point below the grip site (robosuite's Panda)
PALM_ABOVE = 0.049  # the hand's lowest point (the fingers' roots) above the grip site
RIM_INSET = 0.006  # from a wide object's outer edge to where the fingers pinch its wall


@dataclass(frozen=True)
class PlaceGoal:
    """One object to move (`obj`, its index in the env's objects) onto or into a target.

    `support`: the object it must rest on (resting_on), or `site`: the region site
    (site_on / site_in) with `site_half` its box half sizes (3,)."""

    mode: Mode
    obj: int
    obj_center: np.ndarray  # (3,) centre of its collision boxes, body frame
    obj_half: np.ndarray  # (3,) their half sizes, body frame
    support: int | None = None
    support_center: np.ndarray | None = None
    support_half: np.ndarray | None = None
    site: int | None = None
    site_half: np.ndarray | None = None


class UnsolvableGoal(MetasimInputError, ValueError):
    """A task the expert cannot solve: an input error (the policy does not fit the suite),
    shown without a traceback, and a ValueError for code that builds the policy."""

    def __init__(self, scene: str, problem: str) -> None:
        super().__init__(f"policy libero_expert on scene {scene!r}", [problem])


def _kind(node: Any) -> str:
    """A predicate node's kind, with the leaves of a combinator: "any of ['joint_value']"."""
    kind = str(next(iter(node.model_dump()), type(node).__name__))
    parts = getattr(node, "all", None) or getattr(node, "any", None)
    if isinstance(parts, list):
        return f"{kind} of {sorted({_kind(p) for p in parts})}"
    return kind


def _atom(ctx: PolicyContext) -> Any:
    node: Any = ctx.compiled.scene.task.success
    while isinstance(node, AllOf) and len(node.all) == 1:
        node = node.all[0]
    if isinstance(node, RestingOn | SiteOn | SiteIn):
        return node
    raise UnsolvableGoal(
        ctx.compiled.scene.name,
        "the libero_expert solves goals that move one object onto or into a target (one "
        f"site_in, site_on or resting_on atom); this goal is the predicate {_kind(node)!r}",
    )


def _extent(ctx: PolicyContext, name: str) -> tuple[np.ndarray, np.ndarray]:
    idx = ctx.compiled.index
    return body_extent(ctx.compiled, int(idx.object_body[ctx.object_names.index(name)]))


def _object(ctx: PolicyContext, name: str, role: str) -> int:
    if name not in ctx.object_names:
        raise UnsolvableGoal(
            ctx.compiled.scene.name, f"the libero_expert needs {role} {name!r} to be an object"
        )
    return ctx.object_names.index(name)


def site_half_world(ctx: PolicyContext, site: str) -> np.ndarray:
    """(3,) half sizes of a region site's box in the world at the model's reference pose
    (|R @ size|, as LIBERO's `in_box`; region sites keep their orientation)."""
    m = ctx.compiled.model
    data = mujoco.MjData(m)
    mujoco.mj_kinematics(m, data)
    sid = m.site(site).id
    mat = data.site_xmat[sid].reshape(3, 3)
    return np.asarray(np.abs(mat @ m.site_size[sid]))


def place_goal(ctx: PolicyContext) -> PlaceGoal:
    """The task's pick-and-place goal; a ValueError naming the predicate otherwise."""
    atom = _atom(ctx)
    if isinstance(atom, RestingOn):
        a, b = atom.resting_on.object, atom.resting_on.support
        oc, oh = _extent(ctx, a)
        sc, sh = _extent(ctx, b)
        obj, sup = _object(ctx, a, "the object"), _object(ctx, b, "the support")
        return PlaceGoal("resting_on", obj, oc, oh, support=sup, support_center=sc, support_half=sh)
    args = atom.site_on if isinstance(atom, SiteOn) else atom.site_in
    mode: Mode = "site_on" if isinstance(atom, SiteOn) else "site_in"
    if args.site not in ctx.fixture_sites:
        raise UnsolvableGoal(ctx.compiled.scene.name, f"no region site {args.site!r}")
    oc, oh = _extent(ctx, args.object)
    return PlaceGoal(
        mode,
        _object(ctx, args.object, "the object"),
        oc,
        oh,
        site=ctx.fixture_sites.index(args.site),
        site_half=site_half_world(ctx, args.site),
    )


@dataclass(frozen=True)
class FixtureBoxes:
    """The fixtures' collision geoms as world boxes relative to their bodies: `body` (k,)
    index into the env's fixture bodies, `offset` (k, 3) from the body origin, `half`
    (k, 3). Fixture parts translate (drawers) but keep their reference orientation."""

    body: np.ndarray
    offset: np.ndarray
    half: np.ndarray

    def at(self, body_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(centres, halves) (B, k, 3) from the fixture bodies' positions (B, nb, 3)."""
        b = body_pos.shape[0]
        return body_pos[:, self.body] + self.offset, np.broadcast_to(
            self.half, (b, *self.half.shape)
        )


def fixture_boxes(ctx: PolicyContext) -> FixtureBoxes:
    """Every colliding geom of the fixtures (not the arena's), at the reference pose."""
    m = ctx.compiled.model
    data = mujoco.MjData(m)
    mujoco.mj_kinematics(m, data)
    body, offset, half = [], [], []
    for k, name in enumerate(ctx.fixture_bodies):
        if name.startswith("arena/"):
            continue
        bid = m.body(name).id
        for g in np.flatnonzero(m.geom_bodyid == bid):
            if m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0:
                continue
            rot = data.geom_xmat[g].reshape(3, 3)
            body.append(k)
            offset.append(data.geom_xpos[g] + rot @ m.geom_aabb[g, :3] - data.xpos[bid])
            half.append(np.abs(rot) @ m.geom_aabb[g, 3:])
    return FixtureBoxes(
        np.array(body, dtype=np.int64),
        np.array(offset).reshape(-1, 3),
        np.array(half).reshape(-1, 3),
    )


def world_box(
    pos: np.ndarray, quat: np.ndarray, center: np.ndarray, half: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """World axis-aligned box of a body's collision boxes: pos (B, 3), quat (B, 4) wxyz,
    center/half (3,) in the body frame -> (centre (B, 3), half (B, 3), rotation (B, 3, 3))."""
    rot = quat_to_mat(quat)
    return pos + rot @ center, np.abs(rot) @ half, rot


@dataclass(frozen=True)
class Grasp:
    """Per env: where the grip site goes (B, 3), the world direction angle (B,) along
    which the fingers close, and its period (B,): pi, or pi/2 for a square side."""

    point: np.ndarray
    closing: np.ndarray
    period: np.ndarray


def rim_side(
    center: np.ndarray,
    radius: np.ndarray,
    z: np.ndarray,
    others: tuple[np.ndarray, np.ndarray],
    base_xy: np.ndarray,
    turn: np.ndarray,
    n: int = 16,
) -> np.ndarray:
    """(B, 2) unit x-y direction from a wide object's centre (B, 3) to the side of its
    wall the hand pinches: of `n` directions, the one whose outer finger (8 cm outside
    the wall at `radius` (B,)) is farthest (up to 4 cm) from the other objects' boxes
    (`others`: centres and halves (B, k, 3)) that reach above the fingertips at grip
    height `z` (B,); ties go to the side facing the robot's base (x-y `base_xy` (2,)),
    turned by `turn` (B,) rad (a retry pinches another side)."""
    ang = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    u = np.stack([np.cos(ang), np.sin(ang)], 1)  # (n, 2)
    finger = center[:, None, :2] + (radius[:, None, None] + 0.045) * u[None]  # (B, n, 2)
    oc, oh = others
    gap = np.abs(finger[:, :, None] - oc[:, None, :, :2]) - oh[:, None, :, :2] - 0.012
    dist = np.linalg.norm(np.maximum(gap, 0.0), axis=3)  # (B, n, k)
    tall = (oc[:, :, 2] + oh[:, :, 2]) > (z - FINGER_BELOW - 0.005)[:, None]  # (B, k)
    dist = np.where(tall[:, None], dist, np.inf)
    clear = np.minimum(dist.min(axis=2, initial=np.inf), 0.04)  # (B, n)
    home = base_xy[None] - center[:, :2]
    home /= np.maximum(np.linalg.norm(home, axis=1, keepdims=True), 1e-9)
    c, s = np.cos(turn), np.sin(turn)
    home = np.stack([c * home[:, 0] - s * home[:, 1], s * home[:, 0] + c * home[:, 1]], 1)
    score = clear + 0.01 * np.einsum("nj,bj->bn", u, home)
    return np.asarray(u[np.argmax(score, axis=1)])


def plan_grasp(
    center: np.ndarray,
    half: np.ndarray,
    rot: np.ndarray,
    body_half: np.ndarray,
    others: tuple[np.ndarray, np.ndarray],
    base_xy: np.ndarray,
    retries: np.ndarray | None = None,
) -> Grasp:
    """Grasp of an object from its world box (centre, half (B, 3)), its rotation (B, 3, 3)
    and body-frame half sizes (3,); `others`: the other objects' world boxes (centres,
    halves (B, k, 3)); `base_xy` (2,): the robot's base.

    An object whose narrower horizontal side fits the gripper is taken at its centre,
    fingers closing across that side, as low as the palm clears its top and the fingers
    clear its support (a flat box: the fingertips just above the table; a bottle: 3.5 cm
    below its top). A wider one (a bowl, a plate) is pinched by its wall on the side
    where the outer finger is clear of other objects (`rim_side`), fingers closing along
    the radius; after a slip (`retries` (B,) > 0) 4 mm deeper per retry, on a side turned
    by 90 degrees per retry."""
    b = center.shape[0]
    tries = np.zeros(b) if retries is None else np.asarray(retries, dtype=np.float64)
    vertical = np.argmax(np.abs(rot[:, 2, :]), axis=1)  # (B,) the body axis nearest world z
    axes = np.array([[1, 2], [0, 2], [0, 1]])[vertical]  # (B, 2) the two horizontal ones
    halves = body_half[axes]  # (B, 2)
    narrow = np.take_along_axis(axes, np.argmin(halves, axis=1)[:, None], axis=1)[:, 0]
    across = rot[np.arange(b), :, narrow]  # (B, 3) world direction of the narrow side
    closing = np.arctan2(across[:, 1], across[:, 0])
    square = np.abs(halves[:, 0] - halves[:, 1]) < 0.004  # or round: either side will do
    period = np.where(square, np.pi / 2, np.pi)
    top = center[:, 2] + half[:, 2]
    bottom = center[:, 2] - half[:, 2]
    point = center.copy()
    point[:, 2] = np.maximum(bottom + FINGER_BELOW + 0.0015, top - PALM_ABOVE + 0.014)
    wide = 2 * halves.min(axis=1) > GRIPPER_SPAN
    if wide.any():
        radius = halves[wide].max(axis=1) - RIM_INSET
        z = top[wide] - 0.018 - 0.004 * np.minimum(tries[wide], 2)
        others_w = (others[0][wide], others[1][wide])
        side = rim_side(center[wide], radius, z, others_w, base_xy, tries[wide] * np.pi / 2)
        point[wide, :2] = center[wide, :2] + side * radius[:, None]
        point[wide, 2] = z
        closing[wide] = np.arctan2(side[:, 1], side[:, 0])
        period[wide] = np.pi
    return Grasp(point, closing, period)
