"""Stage 5: objects. Points above the support plane are clustered (DBSCAN); each cluster
becomes a closed convex mesh (its points plus their footprint on the table), which is
both its visual and its collision geometry. Everything else is the static background.

All coordinates here are in the scene frame (table top at z = 0, metres).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import open3d as o3d
from scipy.spatial import ConvexHull, QhullError

from metasim.guards import write_atomic


@dataclass(frozen=True)
class MeshData:
    """A triangle mesh: vertices (V, 3), faces (F, 3) int, colours (V, 3) in [0, 1]."""

    vertices: np.ndarray
    faces: np.ndarray
    colors: np.ndarray


@dataclass(frozen=True)
class ReconObject:
    """A segmented object: `centre` (3,) is its pose in the scene (the centre of its
    bounding box, whose bottom is the table), `mesh` is relative to that centre."""

    name: str
    centre: np.ndarray
    yaw: float  # the body's yaw: the mesh is aligned with its bounding rectangle
    mesh: MeshData
    color: np.ndarray  # (3,) median colour of its points
    n_points: int


def cluster_above(
    points: np.ndarray,
    table_centre: np.ndarray,
    table_half: np.ndarray,
    eps: float,
    min_height: float,
    max_height: float = 0.5,
    min_points: int = 40,
    exclude: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Indices of each cluster of points above the table (not those in `exclude`, e.g.
    walls), largest first."""
    rel = np.abs(points[:, :2] - table_centre)
    above = (
        (points[:, 2] > min_height)
        & (points[:, 2] < max_height)
        & np.all(rel < table_half + 0.02, axis=1)
    )
    if exclude is not None and len(exclude):
        above[exclude] = False
    cand = np.flatnonzero(above)
    if len(cand) < min_points:
        return []
    pcd = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points[cand]))
    labels = np.asarray(pcd.cluster_dbscan(eps=eps, min_points=8))
    clusters = []
    for lab in range(labels.max() + 1 if len(labels) else 0):
        idx = cand[labels == lab]
        if len(idx) < min_points:
            continue
        extent = np.ptp(points[idx], axis=0)
        if points[idx, 2].max() < 2 * min_height or extent.max() > 0.6:
            continue  # a bump in the table, or not an object one could pick up
        clusters.append(idx)
    return sorted(clusters, key=len, reverse=True)


def convex_mesh(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices and outward-facing triangles of the convex hull of (N, 3) points."""
    hull = ConvexHull(points)
    verts = points[hull.vertices]
    remap = {int(v): i for i, v in enumerate(hull.vertices)}
    faces = np.array([[remap[int(v)] for v in s] for s in hull.simplices], dtype=np.int64)
    centre = verts.mean(axis=0)
    tri = verts[faces]
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    flip = np.einsum("ij,ij->i", normal, tri.mean(axis=1) - centre) < 0
    faces[flip] = faces[flip][:, ::-1]
    return verts, faces


def make_object(name: str, points: np.ndarray, colors: np.ndarray) -> ReconObject | None:
    """Close the object down to the table (its lowest ring projected onto z = 0) and
    mesh its convex hull; None when the points span no volume."""
    low = points[points[:, 2] < points[:, 2].min() + 0.01].copy()
    low[:, 2] = 0.0
    allp = np.concatenate([points, low])
    try:
        verts, faces = convex_mesh(allp)
    except QhullError:
        return None
    (cx, cy), _, angle = cv2.minAreaRect(verts[:, :2].astype(np.float32))
    yaw = math.radians(angle)
    c, s = math.cos(yaw), math.sin(yaw)
    centre = np.array([cx, cy, verts[:, 2].max() / 2.0])
    # Body frame: yawed with the footprint's bounding rectangle, so the mesh is axis
    # aligned in it (a box's half-extents are then its sides, what the expert grasps by).
    local = (verts - centre) @ np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
    color = np.median(colors, axis=0)
    mesh = MeshData(local, faces, np.tile(color, (len(verts), 1)))
    return ReconObject(name, centre, yaw, mesh, color, len(points))


def background_mesh(mesh: o3d.geometry.TriangleMesh, drop: np.ndarray, target: int) -> MeshData:
    """The scan mesh without the triangles that touch a dropped (object) vertex,
    decimated to about `target` triangles."""
    tris = np.asarray(mesh.triangles)
    bad = np.zeros(len(mesh.vertices), dtype=bool)
    bad[drop] = True
    keep = ~bad[tris].any(axis=1)
    out = o3d.geometry.TriangleMesh(mesh)
    out.remove_triangles_by_mask(~keep)
    out.remove_unreferenced_vertices()
    if len(out.triangles) > 8 * target:
        # A room-sized scan: quadric decimation of millions of triangles takes minutes;
        # vertex clustering first brings it to about 4x the target in a second.
        cell = math.sqrt(2.0 * out.get_surface_area() / (4 * target))
        out = out.simplify_vertex_clustering(cell, o3d.geometry.SimplificationContraction.Average)
    if len(out.triangles) > target:
        out = out.simplify_quadric_decimation(target)
    out.remove_degenerate_triangles()
    out.remove_unreferenced_vertices()
    verts = np.asarray(out.vertices)
    cols = np.asarray(out.vertex_colors) if out.has_vertex_colors() else np.full_like(verts, 0.6)
    return MeshData(verts, np.asarray(out.triangles, dtype=np.int64), cols)


def write_obj(path: str, mesh: MeshData, uv: np.ndarray | None = None) -> None:
    """Write a Wavefront OBJ (with texture coordinates `uv` (F*3, 2) per face corner)."""
    lines = [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in mesh.vertices]
    if uv is None:
        lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in mesh.faces]
    else:
        lines += [f"vt {u:.6f} {v:.6f}" for u, v in uv]
        lines += [
            f"f {a + 1}/{3 * i + 1} {b + 1}/{3 * i + 2} {c + 1}/{3 * i + 3}"
            for i, (a, b, c) in enumerate(mesh.faces)
        ]
    write_atomic(Path(path), "\n".join(lines) + "\n")
