"""How close the open gripper would come to the fixtures at a candidate grasp: the LIBERO
expert's check that a finger does not land on a drawer's wall or a cabinet's side, and
the slide that takes a grasped object out from under a fixture before it is lifted.

Both sides are oriented boxes read from the compiled model: the gripper's colliding geoms
(hand, fingers, pads) with the fingers open, in the grip-site frame, and every colliding
geom of the fixtures (not the arena's), each in its own frame at the reference pose,
translated with its fixture body as the privileged observation reports it (a drawer
slides; fixture parts keep their reference orientation). A geom's box is its local AABB
(`geom_aabb`), so a mesh is bounded by its box. The gap between two boxes is the largest
separation along the 15 axes of the separating-axis test: positive exactly when the boxes
are apart, and never more than their true distance.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from metasim.policies.base import PolicyContext
from metasim.robosuite.expert_machine import down_frame
from metasim.scene.compile import CompiledScene

NEAR = 0.25  # fixture geoms farther than this (x-y, from the object) are not checked
CAP = 0.04  # gaps are measured up to this much


@dataclass(frozen=True)
class Boxes:
    """Oriented boxes: centres (..., 3), half sizes (..., 3) in their own frames and
    rotations (..., 3, 3) (columns: the box axes in the parent frame)."""

    center: np.ndarray
    half: np.ndarray
    rot: np.ndarray


def _geom_box(m: mujoco.MjModel, d: mujoco.MjData, g: int) -> tuple[np.ndarray, np.ndarray]:
    """World centre (3,) and rotation (3, 3) of geom `g`'s local AABB."""
    rot = d.geom_xmat[g].reshape(3, 3)
    return d.geom_xpos[g] + rot @ m.geom_aabb[g, :3], rot


def _colliding(m: mujoco.MjModel, g: int) -> bool:
    return bool(m.geom_contype[g] or m.geom_conaffinity[g])


def _under(m: mujoco.MjModel, body: int, root: int) -> bool:
    while body > 0:
        if body == root:
            return True
        body = int(m.body_parentid[body])
    return False


def _open_fingers(
    m: mujoco.MjModel, d: mujoco.MjData, qadr: np.ndarray, width: float | None
) -> None:
    """Each finger joint of `qadr` opened by `width` / 2 towards the end of its range
    farther from zero (None: to that end, fully open)."""
    for j in range(m.njnt):
        if m.jnt_qposadr[j] in qadr:
            lo, hi = m.jnt_range[j]
            end = hi if abs(hi) >= abs(lo) else lo
            step = abs(end) if width is None else min(width / 2, abs(end))
            d.qpos[m.jnt_qposadr[j]] = np.sign(end) * step


@dataclass(frozen=True)
class GeomSet:
    """Colliding geoms (G,) of one part: their ids, their poses relative to a reference
    frame (`pos` (G, 3), `rot` (G, 3, 3)) and their bounding boxes in that frame."""

    geom: np.ndarray
    pos: np.ndarray
    rot: np.ndarray
    box: Boxes


def _geom_set(
    m: mujoco.MjModel, d: mujoco.MjData, geoms: list[int], origin: np.ndarray, frame: np.ndarray
) -> GeomSet:
    """`geoms` relative to the frame at `origin` (3,) with rotation `frame` (3, 3)."""
    pos, rot, center = [], [], []
    for g in geoms:
        c, r = _geom_box(m, d, g)
        pos.append(frame.T @ (d.geom_xpos[g] - origin))
        rot.append(frame.T @ r)
        center.append(frame.T @ (c - origin))
    rots = np.array(rot).reshape(-1, 3, 3)
    half = m.geom_aabb[geoms, 3:].reshape(-1, 3).copy()
    box = Boxes(np.array(center).reshape(-1, 3), half, rots)
    return GeomSet(np.array(geoms, dtype=np.int64), np.array(pos).reshape(-1, 3), rots, box)


def gripper_geoms(compiled: CompiledScene, width: float | None = None) -> GeomSet:
    """The gripper's colliding geoms (hand, fingers, pads), its fingers `width` apart
    (None: fully open), in the grip-site frame (x: the closing direction, z: towards
    the fingertips)."""
    m, idx = compiled.model, compiled.index
    d = mujoco.MjData(m)
    _open_fingers(m, d, np.asarray(idx.gripper_qpos), width)
    mujoco.mj_kinematics(m, d)
    root = int(m.site_bodyid[idx.ee_site])
    root = int(idx.hand_body) if _under(m, root, int(idx.hand_body)) else root
    geoms = [
        g for g in range(m.ngeom) if _colliding(m, g) and _under(m, int(m.geom_bodyid[g]), root)
    ]
    site_rot = d.site_xmat[idx.ee_site].reshape(3, 3)
    return _geom_set(m, d, geoms, d.site_xpos[idx.ee_site].copy(), site_rot)


@dataclass(frozen=True)
class FixtureGeoms:
    """The fixtures' colliding geoms (k,) in the world at the reference pose (`geoms`),
    `body` (k,) the index of each one's body among the env's fixture bodies and
    `ref_body` (k, 3) that body's reference position: a geom moves with its body."""

    geoms: GeomSet
    body: np.ndarray
    ref_body: np.ndarray

    def shift(self, body_pos: np.ndarray) -> np.ndarray:
        """(B, k, 3) each geom's displacement from the reference pose, from the fixture
        bodies' positions (B, nb, 3)."""
        return np.asarray(body_pos[:, self.body] - self.ref_body)

    def at(self, body_pos: np.ndarray) -> Boxes:
        """World boxes (B, k) from the fixture bodies' positions (B, nb, 3)."""
        box = self.geoms.box
        b = body_pos.shape[0]
        return Boxes(
            box.center + self.shift(body_pos),
            np.broadcast_to(box.half, (b, *box.half.shape)),
            np.broadcast_to(box.rot, (b, *box.rot.shape)),
        )


def fixture_geoms(ctx: PolicyContext) -> FixtureGeoms:
    """Every colliding geom of the fixtures (not the arena's), at the reference pose."""
    m = ctx.compiled.model
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    geoms, body, ref = [], [], []
    for k, name in enumerate(ctx.fixture_bodies):
        if name.startswith("arena/"):
            continue
        bid = m.body(name).id
        for g in np.flatnonzero(m.geom_bodyid == bid):
            if _colliding(m, int(g)):
                geoms.append(int(g))
                body.append(k)
                ref.append(d.xpos[bid].copy())
    world = _geom_set(m, d, geoms, np.zeros(3), np.eye(3))
    return FixtureGeoms(world, np.array(body, dtype=np.int64), np.array(ref).reshape(-1, 3))


def box_gap(a: Boxes, b: Boxes) -> np.ndarray:
    """(...) separation of boxes `a` and `b` (broadcast against each other): the largest,
    over the separating-axis test's 15 axes, of the distance between the boxes'
    projections; > 0 exactly when they do not overlap, <= their Euclidean distance."""
    ax_a = np.swapaxes(a.rot, -1, -2)  # (..., 3, 3), rows: the axes
    ax_b = np.swapaxes(b.rot, -1, -2)
    ax_a, ax_b = np.broadcast_arrays(ax_a, ax_b)
    cross = np.cross(ax_a[..., :, None, :], ax_b[..., None, :, :]).reshape(*ax_a.shape[:-2], 9, 3)
    axes = np.concatenate([ax_a, ax_b, cross], axis=-2)  # (..., 15, 3)
    norm = np.linalg.norm(axes, axis=-1)
    axes = axes / np.maximum(norm, 1e-9)[..., None]
    r_a = np.abs(np.einsum("...lk,...ik->...li", axes, ax_a)) @ a.half[..., None]
    r_b = np.abs(np.einsum("...lk,...ik->...li", axes, ax_b)) @ b.half[..., None]
    dist = np.abs(np.einsum("...lk,...k->...l", axes, b.center - a.center))
    sep = np.where(norm > 1e-6, dist - r_a[..., 0] - r_b[..., 0], -np.inf)
    return np.asarray(sep.max(axis=-1))


def _placed(box: Boxes, point: np.ndarray, frame: np.ndarray) -> Boxes:
    """Boxes (G,) given in a frame, placed at `point` (B, n, 3) with rotation `frame`
    (B, n, 3, 3): world boxes (B, n, G)."""
    center = point[..., None, :] + np.einsum("bnij,gj->bngi", frame, box.center)
    rot = np.einsum("bnij,gjk->bngik", frame, box.rot)
    return Boxes(center, np.broadcast_to(box.half, center.shape), rot)


class GripClearance:
    """Gaps between the open gripper at candidate grasps and the fixtures near them: box
    gaps first (`box_gap`), then, for the pairs whose boxes come within `CAP`, the
    geoms' own distance (`mj_geomDistance`: a mesh's convex hull) in a private MjData
    whose geom poses are set here, never stepped. `widths`: the finger openings (m) a
    grasp may approach with, one gripper geom set each."""

    def __init__(self, ctx: PolicyContext, widths: tuple[float, ...]) -> None:
        self.model = ctx.compiled.model
        self.data = mujoco.MjData(self.model)
        mujoco.mj_kinematics(self.model, self.data)
        self.widths = widths
        self.grippers = [gripper_geoms(ctx.compiled, w) for w in widths]
        self.fixtures = fixture_geoms(ctx)

    def __call__(
        self, point: np.ndarray, closing: np.ndarray, fixture_pos: np.ndarray, width: int = 0
    ) -> np.ndarray:
        """(B, n) smallest gap (capped at `CAP`) between the gripper, its fingers
        `widths[width]` apart, pointing down at grip-site positions `point` (B, n, 3)
        with the fingers closing along the world angles `closing` (B, n), and the
        fixtures, whose bodies are at `fixture_pos` (B, nb, 3)."""
        hand = self.grippers[width]
        out = np.full(point.shape[:2], CAP)
        fix = self.fixtures.at(fixture_pos)
        reach = np.linalg.norm(fix.center[:, :, :2] - point[:, :1, :2], axis=2)
        near = np.flatnonzero((reach < NEAR + np.linalg.norm(fix.half, axis=2)).any(axis=0))
        if near.size == 0:
            return out
        frame = down_frame(closing)  # (B, n, 3, 3)
        grip = _placed(hand.box, point, frame)
        pair = box_gap(
            Boxes(grip.center[..., None, :], grip.half[..., None, :], grip.rot[..., None, :, :]),
            Boxes(*(x[:, None, None, near] for x in (fix.center, fix.half, fix.rot))),
        )  # (B, n, G, k)
        gap = np.minimum(pair, CAP)
        shift = self.fixtures.shift(fixture_pos)[:, near]
        for b, c, g, k in np.argwhere(pair < CAP):
            gap[b, c, g, k] = self._distance(
                hand, int(g), point[b, c], frame[b, c], int(near[k]), shift[b, k]
            )
        return np.asarray(np.minimum(out, gap.min(axis=(2, 3))))

    def _distance(
        self,
        grip: GeomSet,
        g: int,
        point: np.ndarray,
        frame: np.ndarray,
        k: int,
        shift: np.ndarray,
    ) -> float:
        """Signed distance between gripper geom `g` of `grip` with the grip site at
        `point` (3,) and `frame` (3, 3), and fixture geom `k` shifted by `shift` (3,)."""
        m, d, fix = self.model, self.data, self.fixtures.geoms
        a, b = int(grip.geom[g]), int(fix.geom[k])
        d.geom_xpos[a] = point + frame @ grip.pos[g]
        d.geom_xmat[a] = (frame @ grip.rot[g]).reshape(9)
        d.geom_xpos[b] = fix.pos[k] + shift
        d.geom_xmat[b] = fix.rot[k].reshape(9)
        return float(mujoco.mj_geomDistance(m, d, a, b, CAP, None))


def world_aabb(boxes: Boxes) -> tuple[np.ndarray, np.ndarray]:
    """World axis-aligned (centres, halves) (..., 3) around oriented boxes."""
    return boxes.center, np.einsum("...ij,...j->...i", np.abs(boxes.rot), boxes.half)


def overhang_escape(
    center: np.ndarray, radius: np.ndarray, boxes: Boxes, margin: float = 0.01
) -> np.ndarray:
    """(B, 2) x-y shift that takes a round footprint (centre (B, 3), `radius` (B,)) out
    from under the boxes (B, k) that hang over it (their bottom above its centre, their
    footprint overlapping it): the object would catch on them if lifted straight up (a
    bowl at the back of a drawer, under the cabinet's top). Each box is escaped along
    the horizontal box axis that needs the shortest move, `margin` beyond its edge."""
    shift = np.zeros((center.shape[0], 2))
    mid, extent = world_aabb(boxes)
    bottom = mid[..., 2] - extent[..., 2]  # (B, k)
    for _ in range(2):  # a second pass for boxes the first shift moved under
        for k in range(boxes.center.shape[1]):
            rot, half = boxes.rot[:, k], boxes.half[:, k]  # (B, 3, 3), (B, 3)
            flat = np.argsort(np.abs(rot[:, 2, :]), axis=1)[:, :2]  # the two most level axes
            rel = center[:, :2] + shift - boxes.center[:, k, :2]
            pens, dirs = [], []
            for a in range(2):
                pick = np.broadcast_to(flat[:, None, a : a + 1], (len(rot), 3, 1))
                axis = np.take_along_axis(rot, pick, axis=2)[:, :2, 0]
                axis = axis / np.maximum(np.linalg.norm(axis, axis=1, keepdims=True), 1e-9)
                along = np.einsum("bj,bj->b", rel, axis)
                h = np.take_along_axis(half, flat[:, a : a + 1], axis=1)[:, 0]
                pens.append(h + radius + margin - np.abs(along))
                dirs.append(np.where(along >= 0, 1.0, -1.0)[:, None] * axis)
            pen = np.stack(pens, 1)  # (B, 2)
            over = (pen > margin).all(axis=1) & (bottom[:, k] > center[:, 2])
            a = np.argmin(pen, axis=1)
            move = np.where(
                (a == 0)[:, None], dirs[0] * pens[0][:, None], dirs[1] * pens[1][:, None]
            )
            shift = np.where(over[:, None], shift + move, shift)
    return shift
