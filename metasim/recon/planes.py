"""Stage 4, the support surface. A real scan shows the room as well as the table: the
floor (often the largest plane), walls, the table's legs. The planes of the scan are found
by repeated RANSAC; "up" is the normal of the plane closest to the cameras' own up; the
support is the highest large horizontal plane under the scan's centre of attention (where
the cameras' optical axes meet the geometry), and its extent is the connected patch of its
inliers under that centre only. Large near-vertical patches are walls: neither support
nor objects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import open3d as o3d
from scipy import ndimage

HORIZONTAL = math.cos(math.radians(12))  # |n . up| above this: a horizontal plane
VERTICAL = math.cos(math.radians(75))  # |n . up| below this: a wall
MIN_SUPPORT_AREA = 0.04  # m^2: a support is at least this large (a box top is not)
MIN_WALL_AREA = 0.1  # m^2
FOCUS_TOLERANCE = 0.03  # m: the support may lie this far above the centre of attention
CELL = 0.02  # m: grid of the connected-patch analysis


@dataclass(frozen=True)
class PlaneFit:
    """A plane n . x + d = 0 (unit `normal`) and every point within the threshold of it."""

    normal: np.ndarray  # (3,)
    offset: float
    inliers: np.ndarray  # (K,) indices into the points


@dataclass(frozen=True)
class Support:
    """The chosen support plane (`normal` up, towards the cameras), its patch's inliers,
    the wall points (indices, to keep out of the objects) and what was considered."""

    normal: np.ndarray  # (3,)
    offset: float
    inliers: np.ndarray  # (K,) indices into the points: the support patch only
    walls: np.ndarray  # (W,) indices into the points
    focus: np.ndarray  # (3,) the scan's centre of attention
    planes: list[dict[str, Any]] = field(default_factory=list)


def fit_plane(points: np.ndarray) -> tuple[np.ndarray, float]:
    """Least-squares plane of (K, 3) points: (unit normal, offset)."""
    centre = points.mean(axis=0)
    sample = points[:: max(1, len(points) // 200000)] - centre
    normal = np.linalg.svd(sample, full_matrices=False)[2][2]
    return normal, float(-normal @ centre)


def detect_planes(
    points: np.ndarray, threshold: float, max_planes: int = 8, voxel: float = 0.015
) -> list[PlaneFit]:
    """Planes of (N, 3) points, largest first: RANSAC on a voxel-downsampled copy, each
    plane then refit by least squares on all points within `threshold` of it."""
    pcd = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points))
    rest = np.asarray(pcd.voxel_down_sample(voxel).points)
    min_count = max(30, int(0.02 * len(rest)))
    o3d.utility.random.seed(0)
    planes: list[PlaneFit] = []
    while len(planes) < max_planes and len(rest) >= min_count:
        cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(rest))
        _, inl = cloud.segment_plane(threshold, 3, 1000)
        if len(inl) < min_count:
            break
        normal, offset = fit_plane(rest[np.asarray(inl)])
        for _ in range(2):  # refit on the full cloud's inliers
            idx = np.flatnonzero(np.abs(points @ normal + offset) < threshold)
            if len(idx) < 3:
                break
            normal, offset = fit_plane(points[idx])
        idx = np.flatnonzero(np.abs(points @ normal + offset) < threshold)
        planes.append(PlaneFit(normal, offset, idx))
        rest = rest[np.abs(rest @ normal + offset) >= threshold]
    return planes


def plane_basis(normal: np.ndarray) -> np.ndarray:
    """(2, 3) two unit vectors spanning the plane."""
    helper = np.eye(3)[int(np.argmin(np.abs(normal)))]
    u = np.cross(normal, helper)
    u /= np.linalg.norm(u)
    return np.stack([u, np.cross(normal, u)])


def patches(xy: np.ndarray, cell: float = CELL) -> tuple[np.ndarray, np.ndarray]:
    """Connected patches of (K, 2) in-plane points on a grid of `cell`: label per point
    (K,) (0-based) and area per label (L,) in m^2."""
    cell = max(cell, float(np.max(np.ptp(xy, axis=0))) / 3000.0)  # bound the grid
    ij = np.floor((xy - xy.min(axis=0)) / cell).astype(np.int64)
    grid = np.zeros(tuple(ij.max(axis=0) + 1), dtype=bool)
    grid[ij[:, 0], ij[:, 1]] = True
    grown = ndimage.binary_dilation(grid, structure=np.ones((3, 3), dtype=bool))
    labels, count = ndimage.label(grown, structure=np.ones((3, 3), dtype=int))
    per_point = labels[ij[:, 0], ij[:, 1]] - 1
    cells = np.bincount(labels[grid], minlength=count + 1)[1:]
    return per_point, cells * cell * cell


def camera_up(poses: np.ndarray) -> np.ndarray:
    """(3,) a guess at "up" from camera-to-world poses (N, 4, 4) (OpenCV): the mean of the
    cameras' up (-y) minus their viewing direction (+z). A camera looking down by an angle
    a errs by |45 deg - a|, and an orbit's errors cancel."""
    rot = poses[:, :3, :3]
    guess = (-rot[:, :, 1] - rot[:, :, 2]).sum(axis=0)
    return np.asarray(guess / max(np.linalg.norm(guess), 1e-12))


def attention(points: np.ndarray, poses: np.ndarray, cone: float = 0.03) -> np.ndarray:
    """(3,) the scan's centre of attention: per camera, the first surface along its
    optical axis (points within a narrow cone of it); the median over cameras."""
    sample = points[:: max(1, len(points) // 200000)]
    hits = []
    for pose in poses:
        origin, axis = pose[:3, 3], pose[:3, 2]
        rel = sample - origin
        t = rel @ axis
        perp2 = np.einsum("ij,ij->i", rel, rel) - t * t
        near = (t > 0) & (perp2 < (cone * t) ** 2)
        if np.count_nonzero(near) >= 5:
            hits.append(origin + np.percentile(t[near], 2) * axis)
    if not hits:
        return np.asarray(np.median(points, axis=0))
    return np.asarray(np.median(np.stack(hits), axis=0))


SAME_SURFACE = 0.03  # m: horizontal planes closer than this are one (noisy) surface


@dataclass(frozen=True)
class _Candidate:
    """A horizontal plane's patch that could be the support."""

    under: bool  # the patch lies under the focus
    height: float  # of the focus above the plane
    area: float  # of the patch, m^2
    patch: np.ndarray  # (K,) indices into the points
    index: int  # into the detected planes


def _pick(cands: list[_Candidate]) -> _Candidate | None:
    """The highest candidate under the focus (any, if none is under it); of planes
    within `SAME_SURFACE` of it (a noisy surface fit twice, as stereo depth gives), the
    largest patch."""
    pool = [c for c in cands if c.under] or cands
    if not pool:
        return None
    top = min(c.height for c in pool)
    return max((c for c in pool if c.height < top + SAME_SURFACE), key=lambda c: c.area)


def _horizontal(
    points: np.ndarray,
    plane: PlaneFit,
    normal: np.ndarray,
    offset: float,
    focus: np.ndarray,
    index: int,
) -> tuple[dict[str, Any], _Candidate | None]:
    """A horizontal plane (normal up): its patch nearest the focus, and that patch as a
    support candidate if it is large and not above the focus."""
    basis = plane_basis(normal)
    xy = points[plane.inliers] @ basis.T
    label, area = patches(xy)
    centre = focus @ basis.T
    nearest = label[int(np.argmin(np.linalg.norm(xy - centre, axis=1)))]
    mine = label == nearest
    lo, hi = xy[mine].min(axis=0), xy[mine].max(axis=0)
    under = bool(np.all((centre > lo - 0.05) & (centre < hi + 0.05)))
    height = float(focus @ normal + offset)  # of the focus above the plane
    entry = {
        "kind": "horizontal",
        "area_m2": float(area[nearest]),
        "focus_height_m": height,
        "under_focus": under,
    }
    if height > -FOCUS_TOLERANCE and area[nearest] >= MIN_SUPPORT_AREA:
        return entry, _Candidate(under, height, float(area[nearest]), plane.inliers[mine], index)
    return entry, None


def find_support(points: np.ndarray, poses: np.ndarray, threshold: float) -> Support | None:
    """The support surface of (N, 3) points seen from camera-to-world `poses` (N_cam, 4,
    4), or None when the scan has no large horizontal plane under its centre."""
    planes = detect_planes(points, threshold)
    if not planes:
        return None
    prior = camera_up(poses)
    up = max((p.normal for p in planes), key=lambda n: abs(float(n @ prior)))
    up = up if up @ prior > 0 else -up
    focus = attention(points, poses)
    cands: list[_Candidate] = []
    walls: list[np.ndarray] = []
    report: list[dict[str, Any]] = []
    for k, plane in enumerate(planes):
        sign = 1.0 if plane.normal @ up >= 0 else -1.0
        normal, offset = sign * plane.normal, sign * plane.offset
        tilt = float(normal @ up)
        entry: dict[str, Any] = {"kind": "slanted"}
        if tilt < VERTICAL:
            label, area = patches(points[plane.inliers] @ plane_basis(normal).T)
            big = np.flatnonzero(area >= MIN_WALL_AREA)
            walls.append(plane.inliers[np.isin(label, big)])
            entry = {"kind": "wall", "area_m2": float(area[big].sum())}
        elif tilt > HORIZONTAL:
            entry, cand = _horizontal(points, plane, normal, offset, focus, k)
            cands += [cand] if cand is not None else []
        entry.update(points=len(plane.inliers), tilt_deg=math.degrees(math.acos(min(1.0, tilt))))
        report.append(entry)
    best = _pick(cands)
    if best is None:
        return None
    report[best.index]["kind"] = "support"
    normal, offset = fit_plane(points[best.patch])
    normal, offset = (normal, offset) if normal @ up > 0 else (-normal, -offset)
    wall_idx = np.unique(np.concatenate(walls)) if walls else np.zeros(0, dtype=np.int64)
    return Support(normal, offset, best.patch, wall_idx, focus, report)
