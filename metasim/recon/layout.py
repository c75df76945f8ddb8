"""Stages 4 to 6 on fused geometry: gravity and table frame, object segmentation, and the
scene folder. Input: points/colours (and the scan mesh on the RGB-D path) in the scan's
world frame, already metric; output: scene.yaml and meshes, plus what the report needs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import open3d as o3d

from metasim.recon import frame as fr
from metasim.recon.camera import Intrinsics
from metasim.recon.objects import (
    MeshData,
    ReconObject,
    background_mesh,
    cluster_above,
    make_object,
)
from metasim.recon.scene_out import (
    camera_entry,
    scene_dict,
    scene_name,
    write_meshes,
    write_scene_yaml,
)
from metasim.recon.target import TargetChoice, choose_target


@dataclass(frozen=True)
class Layout:
    """The scene frame (`world_to_scene` 4x4 similarity), table and objects."""

    world_to_scene: np.ndarray
    table_centre: np.ndarray
    table_half: np.ndarray
    plane_rms: float
    objects: list[ReconObject]
    background: MeshData
    support: dict[str, Any]  # how the support plane was chosen (planes.find_support)
    object_points: np.ndarray  # (K,) indices of the input points that became objects


def build_layout(
    points: np.ndarray,
    colors: np.ndarray,
    mesh: o3d.geometry.TriangleMesh | None,
    cam_poses: np.ndarray,
    scale: float,
    spacing: float,
    source: str,
    max_objects: int = 8,
) -> Layout:
    """Find the table and the objects in metric-after-`scale` points (N, 3), seen from
    camera-to-world `cam_poses` (N_cam, 4, 4) in scan units."""
    pts = points * scale
    poses = cam_poses.copy()
    poses[:, :3, 3] *= scale
    plane = fr.support_plane(pts, poses, max(1.5 * spacing, 0.004), source)
    to_table = fr.similarity(scale, fr.table_frame(pts, plane))
    local = fr.apply(to_table, points)
    plane_rms = float(np.sqrt(np.mean(local[plane.inliers, 2] ** 2)))
    t_centre, t_half = fr.table_rect(local, plane.inliers)
    clusters = cluster_above(
        local,
        t_centre,
        t_half,
        eps=2.5 * spacing,
        min_height=max(2 * plane_rms, 0.004),
        min_points=40 if mesh is not None else 12,  # dense TSDF vertices, or sparse SfM points
        exclude=plane.walls,
    )
    objects_local: list[ReconObject] = []
    for idx in clusters[:max_objects]:
        ob = make_object(f"object{len(objects_local)}", local[idx], colors[idx])
        if ob is not None:
            objects_local.append(ob)
    # Centre the objects in the robot's workspace.
    centre = np.mean([o.centre[:2] for o in objects_local], axis=0) if objects_local else t_centre
    offset = np.array([*(fr.WORKSPACE - centre), 0.0])
    world_to_scene = fr.shift(to_table, offset)
    objects = [
        ReconObject(o.name, o.centre + offset, o.yaw, o.mesh, o.color, o.n_points)
        for o in objects_local
    ]
    drop = np.concatenate(clusters) if clusters else np.zeros(0, dtype=np.int64)
    if mesh is not None:
        scan = o3d.geometry.TriangleMesh(mesh)
        scan.vertices = o3d.utility.Vector3dVector(fr.apply(world_to_scene, points))
        background = background_mesh(scan, drop, target=60000)
    else:
        background = _splat_background(fr.apply(world_to_scene, points), colors, drop, spacing)
    return Layout(
        world_to_scene,
        t_centre + offset[:2],
        t_half,
        plane_rms,
        objects,
        background,
        plane.info,
        drop,
    )


def _splat_background(
    pts: np.ndarray, colors: np.ndarray, drop: np.ndarray, spacing: float
) -> MeshData:
    """A background mesh from points alone (RGB-only path): a small flat triangle per
    point, facing up, coloured as the point."""
    keep = np.ones(len(pts), dtype=bool)
    keep[drop] = False
    p, c = pts[keep], colors[keep]
    r = 2.0 * spacing
    offs = np.array([[r, 0, 0], [-r / 2, r * 0.866, 0], [-r / 2, -r * 0.866, 0]])
    verts = (p[:, None, :] + offs[None]).reshape(-1, 3)
    faces = np.arange(len(verts)).reshape(-1, 3)
    return MeshData(verts, faces, np.repeat(c, 3, axis=0))


def write_scene(
    out: Path,
    layout: Layout,
    view_pose: np.ndarray,
    intr: Intrinsics,
    description: str,
    source: str,
) -> tuple[Path, TargetChoice]:
    """Write meshes and scene.yaml; the camera `scan` sits at `view_pose` (camera-to-world
    of the chosen scan frame). Returns the scene file and the task's object choice."""
    if not layout.objects:
        from metasim.errors import MetasimInputError

        raise MetasimInputError(
            source,
            [
                "no object found above the table: expected at least one object standing on "
                "the dominant plane"
            ],
        )
    write_meshes(out, layout.background, layout.objects)
    pose = fr.pose_to_scene(layout.world_to_scene, view_pose)
    cam = camera_entry("scan", pose, intr.fovy, intr.width, intr.height)
    choice = choose_target(layout.objects)
    data = scene_dict(
        scene_name(out),
        description,
        layout.table_centre,
        layout.table_half,
        layout.objects,
        cam,
        choice.name,
    )
    path = out / "scene.yaml"
    write_scene_yaml(path, data, "Written by `metasim recon`; see report.json for its quality.")
    return path, choice


def layout_stats(layout: Layout) -> dict[str, Any]:
    return {
        "plane_rms_m": layout.plane_rms,
        "support": layout.support,
        "table_half_size_m": [float(v) for v in layout.table_half],
        "background_triangles": len(layout.background.faces),
        "objects": [
            {
                "name": o.name,
                "pos": [float(v) for v in o.centre],
                "yaw": float(o.yaw),
                "size_m": [float(v) for v in np.ptp(o.mesh.vertices, axis=0)],
                "points": o.n_points,
                "hull_vertices": len(o.mesh.vertices),
            }
            for o in layout.objects
        ],
    }
