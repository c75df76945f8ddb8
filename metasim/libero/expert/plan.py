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
from metasim.libero.expert.clearance import GripClearance
from metasim.libero.kinds.models import RestingOn, SiteIn, SiteOn
from metasim.policies.base import PolicyContext
from metasim.scene.schema import AllOf
from metasim.tasks.predicates import body_extent

Mode = Literal["resting_on", "site_on", "site_in"]
GRIPPER_SPAN = 0.074  # widest object side the open Panda gripper (8 cm) closes on, with margin
FINGER_BELOW = 0.0135  # the fingers' lowest point below the grip site (robosuite's Panda)
PALM_ABOVE = 0.049  # the hand's lowest point (the fingers' roots) above the grip site
RIM_INSET = 0.006  # from a wide object's outer edge to where the fingers pinch its wall
SIDES = 16  # candidate sides of a wide object's wall to pinch
PINCH_WIDTHS = (0.05, 0.035)  # narrower finger openings a cramped wall is approached with (m)
WALL_ROOM = 0.02  # a grasp this far from every fixture geom is clear of the fixtures (m)
NARROWER = 0.003  # each narrower opening counts as this much less room (m)


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
class Grasp:
    """Per env: where the grip site goes (B, 3), the world direction angle (B,) along
    which the fingers close, and its period (B,): pi, or pi/2 for a square side."""

    point: np.ndarray
    closing: np.ndarray
    period: np.ndarray
    side: np.ndarray  # (B, 2) the x-y direction of a wide object's pinched side, else NaN
    opening: np.ndarray  # (B,) index of the finger opening to approach with (0: full)


@dataclass(frozen=True)
class Surroundings:
    """What a grasp must keep clear of: the other objects' world boxes (`objects`:
    centres, halves (B, k, 3), axis-aligned) and the fixtures, their bodies at
    `fixture_pos` (B, nb, 3), measured by `clearance`."""

    objects: tuple[np.ndarray, np.ndarray]
    fixture_pos: np.ndarray
    clearance: GripClearance

    def subset(self, mask: np.ndarray) -> Surroundings:
        """The envs of `mask` (B,) only."""
        objects = (self.objects[0][mask], self.objects[1][mask])
        return Surroundings(objects, self.fixture_pos[mask], self.clearance)


def _object_clearance(
    finger: np.ndarray, objects: tuple[np.ndarray, np.ndarray], z: np.ndarray
) -> np.ndarray:
    """(B, n) x-y distance (up to 4 cm) from the outer finger's points `finger` (B, n, 2)
    to the object boxes (centres, halves (B, k, 3)) that reach above the fingertips at
    grip height `z` (B,), less a 1.2 cm margin."""
    oc, oh = objects
    gap = np.abs(finger[:, :, None] - oc[:, None, :, :2]) - oh[:, None, :, :2] - 0.012
    dist = np.linalg.norm(np.maximum(gap, 0.0), axis=3)  # (B, n, k)
    tall = (oc[:, :, 2] + oh[:, :, 2]) > (z - FINGER_BELOW - 0.005)[:, None]  # (B, k)
    dist = np.where(tall[:, None], dist, np.inf)
    return np.asarray(np.minimum(dist.min(axis=2, initial=np.inf), 0.04))


def rim_side(
    center: np.ndarray,
    radius: np.ndarray,
    z: np.ndarray,
    around: Surroundings,
    base_xy: np.ndarray,
    turn: np.ndarray,
    n: int = SIDES,
) -> tuple[np.ndarray, np.ndarray]:
    """Where the hand pinches a wide object's wall at height `z` (B,), the grip site
    `radius` (B,) from the object's centre (B, 3): the unit x-y direction (B, 2) from the
    centre and the index (B,) of the finger opening (`around.clearance.widths`) to
    approach with. Of `n` directions and the openings, the one with the most room (up to
    4 cm) around the gripper: its outer finger from the other objects' boxes, and the
    gripper's geoms from the fixtures' (`GripClearance`: a drawer's walls; `WALL_ROOM`
    or more counts as all the room there is); each
    narrower opening counts `NARROWER` less room. Facing the robot's base (x-y `base_xy`
    (2,)), turned by `turn` (B,) rad (a retry pinches another side), counts up to 1 cm
    more where there are 2 cm of room, less where there is less."""
    ang = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    u = np.stack([np.cos(ang), np.sin(ang)], 1)  # (n, 2)
    home = base_xy[None] - center[:, :2]
    home /= np.maximum(np.linalg.norm(home, axis=1, keepdims=True), 1e-9)
    c, s = np.cos(turn), np.sin(turn)
    home = np.stack([c * home[:, 0] - s * home[:, 1], s * home[:, 0] + c * home[:, 1]], 1)
    facing = np.einsum("nj,bj->bn", u, home)  # (B, n)
    grip = np.concatenate(
        [center[:, None, :2] + radius[:, None, None] * u[None], np.repeat(z[:, None, None], n, 1)],
        axis=2,
    )
    closing = np.broadcast_to(ang, facing.shape)
    scores = []
    for k, width in enumerate(around.clearance.widths):
        finger = center[:, None, :2] + (radius[:, None, None] + width / 2 + 0.005) * u[None]
        clear = _object_clearance(finger, around.objects, z)
        walls = around.clearance(grip, closing, around.fixture_pos, k)
        # Fixtures 2 cm away or more leave the choice to the objects and the robot.
        room = np.minimum(clear, np.where(walls >= WALL_ROOM, 0.04, walls))
        # Facing the robot counts for up to 1 cm of room, fading out below 2 cm of room.
        tie = 0.01 * facing * np.clip(room / 0.02, 0.0, 1.0)
        scores.append(room + tie - NARROWER * k)
    best = np.stack(scores, 1).reshape(len(center), -1).argmax(axis=1)  # (B,) over (k, n)
    return np.asarray(u[best % n]), np.asarray(best // n)


def plan_grasp(
    center: np.ndarray,
    half: np.ndarray,
    rot: np.ndarray,
    body_half: np.ndarray,
    around: Surroundings,
    base_xy: np.ndarray,
    retries: np.ndarray | None = None,
    sides: np.ndarray | None = None,
    openings: np.ndarray | None = None,
) -> Grasp:
    """Grasp of an object from its world box (centre, half (B, 3)), its rotation (B, 3, 3)
    and body-frame half sizes (3,); `around`: the other objects, the fixtures and the
    gripper; `base_xy` (2,): the robot's base.

    An object whose narrower horizontal side fits the gripper is taken at its centre,
    fingers closing across that side, as low as the palm clears its top and the fingers
    clear its support (a flat box: the fingertips just above the table; a bottle: 3.5 cm
    below its top). A wider one (a bowl, a plate) is pinched by its wall on the side
    with the most room around the gripper (`rim_side`), fingers closing along the
    radius; after a slip (`retries` (B,) > 0) 4 mm deeper per retry, on a side turned
    by 90 degrees per retry. `sides` (B, 2) and `openings` (B,): the sides and finger
    openings chosen before (NaN: none yet), kept so that they are chosen once per
    attempt."""
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
        side = np.full((b, 2), np.nan) if sides is None else sides.copy()
        opening = np.zeros(b, dtype=np.int64) if openings is None else openings.copy()
        pick = wide & np.isnan(side[:, 0])
        if pick.any():
            side[pick], opening[pick] = rim_side(
                center[pick],
                halves[pick].max(axis=1) - RIM_INSET,
                (top - 0.018 - 0.004 * np.minimum(tries, 2))[pick],
                around.subset(pick),
                base_xy,
                tries[pick] * np.pi / 2,
            )
        side = side[wide]
        point[wide, :2] = center[wide, :2] + side * radius[:, None]
        point[wide, 2] = z
        closing[wide] = np.arctan2(side[:, 1], side[:, 0])
        period[wide] = np.pi
        chosen = np.full((b, 2), np.nan)
        chosen[wide] = side
        return Grasp(point, closing, period, chosen, np.where(wide, opening, 0))
    return Grasp(point, closing, period, np.full((b, 2), np.nan), np.zeros(b, dtype=np.int64))
