"""Stage 3: geometry. TSDF fusion of depth maps with Open3D (RGB-D path), or the SfM
points as a coloured point cloud (RGB-only path)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import open3d as o3d
import open3d.core as o3c

from metasim.recon.camera import Intrinsics


def tsdf_fuse(
    rgbs: list[np.ndarray],
    depths: list[np.ndarray],
    poses: np.ndarray,
    intr: Intrinsics,
    voxel: float,
    depth_max: float,
    tick: Callable[[], None] | None = None,
) -> o3d.geometry.TriangleMesh:
    """Fuse RGB-D frames into a coloured triangle mesh (marching cubes of the TSDF).

    rgbs (H, W, 3) uint8, depths (H, W) metres (0 = none), poses (N, 4, 4) camera-to-world.
    """
    # Open3D's voxel block grid (a hash map of 8^3-voxel blocks); the legacy
    # ScalableTSDFVolume of open3d 0.20 returns empty meshes with numpy 2.
    device = o3c.Device("CPU:0")
    volume = o3d.t.geometry.VoxelBlockGrid(
        attr_names=("tsdf", "weight", "color"),
        attr_dtypes=(o3c.float32, o3c.float32, o3c.float32),
        attr_channels=[o3c.SizeVector([1]), o3c.SizeVector([1]), o3c.SizeVector([3])],
        voxel_size=voxel,
        block_resolution=8,
        block_count=20000,
        device=device,
    )
    k = o3c.Tensor.from_numpy(intr.matrix)
    for rgb, depth, pose in zip(rgbs, depths, poses, strict=True):
        if np.count_nonzero((depth > 0) & (depth < depth_max)) < 100:
            continue  # nothing to fuse (Open3D aborts on a frame that touches no block)
        d = o3d.t.geometry.Image(
            o3c.Tensor.from_numpy(np.ascontiguousarray(depth, dtype=np.float32))
        )
        c = o3d.t.geometry.Image(
            o3c.Tensor.from_numpy(np.ascontiguousarray(rgb, dtype=np.float32) / 255.0)
        )
        ext = o3c.Tensor.from_numpy(np.ascontiguousarray(np.linalg.inv(pose)))
        blocks = volume.compute_unique_block_coordinates(d, k, ext, 1.0, depth_max, 4.0)
        volume.integrate(blocks, d, c, k, k, ext, 1.0, depth_max, 4.0)
        if tick:
            tick()
    mesh = volume.extract_triangle_mesh().to_legacy()
    mesh.compute_vertex_normals()
    return mesh


def mesh_points(mesh: o3d.geometry.TriangleMesh) -> tuple[np.ndarray, np.ndarray]:
    """(N, 3) vertices and (N, 3) colours in [0, 1] of a mesh."""
    pts = np.asarray(mesh.vertices)
    cols = np.asarray(mesh.vertex_colors) if mesh.has_vertex_colors() else np.full_like(pts, 0.6)
    return pts, cols


def dense_note() -> str:
    """Which dense paths (pycolmap MVS on CUDA, a GPU splat/NeRF trainer) could run here."""
    try:
        import pycolmap

        cuda = bool(getattr(pycolmap, "has_cuda", False))
    except ImportError:
        cuda = False
    splat = []
    for mod in ("gsplat", "nerfstudio"):
        try:
            __import__(mod)
            splat.append(mod)
        except ImportError:
            pass
    mvs = "pycolmap MVS needs CUDA: " + ("available" if cuda else "not available, skipped")
    found = ", ".join(splat) or "gsplat/nerfstudio not installed"
    return f"{mvs}; GPU splat/NeRF geometry: {found}, skipped (a CPU splat background: --splats)"
