"""Stage 4: scale and gravity. The support surface (`planes.find_support`: the highest
large horizontal plane under the scan's centre of attention, not the floor or a wall);
its normal, turned towards the cameras, is "up". The scene frame has the table top at z = 0,
x and y along the table's principal axes, and the scanned objects centred in front of
the robot (at `WORKSPACE` in the robot's frame)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import open3d as o3d

from metasim.errors import MetasimInputError
from metasim.recon.planes import find_support, fit_plane

WORKSPACE = np.array([0.5, 0.0])  # where the objects' centre lands, in front of the robot


@dataclass(frozen=True)
class Plane:
    """A plane n . x + d = 0 with unit normal `normal` (pointing up) and its inliers (the
    support patch); `walls` are points of walls (kept out of the objects), `info` says
    how the plane was chosen."""

    normal: np.ndarray  # (3,)
    offset: float
    inliers: np.ndarray  # (K,) indices into the points
    walls: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    info: dict[str, Any] = field(default_factory=dict)


def support_plane(points: np.ndarray, poses: np.ndarray, threshold: float, source: str) -> Plane:
    """The surface the objects stand on, in (N, 3) points seen from camera-to-world poses
    (N_cam, 4, 4): the highest large horizontal plane under the scan's centre of attention
    (`planes.find_support`); without one, the dominant plane. Refined by least squares on
    its inliers, with the normal on the side of the cameras."""
    if len(points) < 100:
        raise MetasimInputError(
            source, [f"too little geometry to find the table ({len(points)} points)"]
        )
    found = find_support(points, poses, threshold)
    cam_centres = poses[:, :3, 3]
    if found is None:
        pcd = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points))
        o3d.utility.random.seed(0)
        _, inliers = pcd.segment_plane(threshold, 3, 2000)
        idx = np.asarray(inliers)
        normal, offset = fit_plane(points[idx])
        walls = np.zeros(0, dtype=np.int64)
        info: dict[str, Any] = {"rule": "dominant plane (no support found)"}
    else:
        normal, offset, idx, walls = found.normal, found.offset, found.inliers, found.walls
        info = {
            "rule": "highest large horizontal plane under the centre of attention",
            "centre_of_attention": [float(v) for v in found.focus],
            "planes": found.planes,
        }
    centre = points[idx].mean(axis=0)
    if np.mean((cam_centres - centre) @ normal) < 0:
        normal, offset = -normal, -offset
    return Plane(normal, float(offset), idx, walls, info)


def table_frame(points: np.ndarray, plane: Plane) -> np.ndarray:
    """(4, 4) rigid transform world -> table frame: z up along the normal, origin at the
    inliers' centre on the plane, x along their principal axis."""
    z = plane.normal
    inl = points[plane.inliers]
    centre = inl.mean(axis=0)
    centre = centre - (z @ centre + plane.offset) * z
    flat = (inl - centre) - np.outer((inl - centre) @ z, z)
    axis = np.linalg.svd(flat[:: max(1, len(flat) // 20000)], full_matrices=False)[2][0]
    x = axis - (axis @ z) * z
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    rot = np.stack([x, y, z])
    out = np.eye(4)
    out[:3, :3] = rot
    out[:3, 3] = -rot @ centre
    return out


def apply(transform: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(N, 3) points through a 4x4 (similarity) transform."""
    return np.asarray(points @ transform[:3, :3].T + transform[:3, 3])


def similarity(scale: float, transform: np.ndarray) -> np.ndarray:
    """`transform` after scaling the world by `scale` about its origin."""
    out = transform.copy()
    out[:3, :3] = transform[:3, :3] * scale
    return out


def shift(transform: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """`transform` followed by a translation by `offset` (3,)."""
    out = transform.copy()
    out[:3, 3] += offset
    return out


def table_rect(points_scene: np.ndarray, inliers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centre (2,) and half-size (2,) of the table top from its inliers (1st-99th
    percentile, robust to stray points)."""
    xy = points_scene[inliers, :2]
    lo, hi = np.percentile(xy, 1, axis=0), np.percentile(xy, 99, axis=0)
    return (lo + hi) / 2.0, np.maximum((hi - lo) / 2.0, 0.05)


def pose_to_scene(transform: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """A camera-to-world pose (4, 4) re-expressed as camera-to-scene (rigid part only)."""
    scale = float(np.cbrt(np.linalg.det(transform[:3, :3])))
    rot = transform[:3, :3] / scale
    out = np.eye(4)
    out[:3, :3] = rot @ pose[:3, :3]
    out[:3, 3] = transform[:3, :3] @ pose[:3, 3] + transform[:3, 3]
    return out
