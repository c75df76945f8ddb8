"""Pinhole intrinsics and camera poses, and rendering a MuJoCo model from a scan pose.

Poses are camera-to-world 4x4 matrices in the OpenCV convention (x right, y down, z
forward), as pycolmap and Open3D use them. A MuJoCo camera looks along -z with +y up,
so its frame is the OpenCV frame turned half a turn about x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

CV_TO_GL = np.diag([1.0, -1.0, -1.0])
SCAN_CAMERA = "recon_scan"


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics; pixel centres at integer coordinates (OpenCV, Open3D)."""

    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int

    @property
    def matrix(self) -> np.ndarray:
        """(3, 3) camera matrix K."""
        return np.array([[self.fx, 0, self.cx], [0, self.fy, self.cy], [0, 0, 1.0]])

    @property
    def fovy(self) -> float:
        """Vertical field of view in degrees (what a MuJoCo camera declares)."""
        return math.degrees(2.0 * math.atan(self.height / (2.0 * self.fy)))

    @classmethod
    def from_fovy(cls, fovy: float, width: int, height: int) -> Intrinsics:
        """The intrinsics of a MuJoCo camera (square pixels, centred principal point)."""
        f = height / (2.0 * math.tan(math.radians(fovy) / 2.0))
        return cls(f, f, (width - 1) / 2.0, (height - 1) / 2.0, width, height)

    def scaled(self, factor: float) -> Intrinsics:
        """The intrinsics of the image resized by `factor`."""
        w, h = round(self.width * factor), round(self.height * factor)
        sx, sy = w / self.width, h / self.height
        return Intrinsics(
            self.fx * sx, self.fy * sy, (self.cx + 0.5) * sx - 0.5, (self.cy + 0.5) * sy - 0.5, w, h
        )

    def to_json(self) -> dict[str, float | int]:
        return {
            "fx": self.fx,
            "fy": self.fy,
            "cx": self.cx,
            "cy": self.cy,
            "width": self.width,
            "height": self.height,
        }


def look_at_pose(eye: np.ndarray, target: np.ndarray, up: np.ndarray | None = None) -> np.ndarray:
    """(4, 4) camera-to-world (OpenCV) of a camera at `eye` looking at `target`."""
    up = np.array([0.0, 0.0, 1.0]) if up is None else up
    z = target - eye
    z = z / np.linalg.norm(z)
    x = np.cross(z, up)
    x = x / np.linalg.norm(x)
    y = np.cross(z, x)
    pose = np.eye(4)
    pose[:3, :3] = np.stack([x, y, z], axis=1)
    pose[:3, 3] = eye
    return pose


def add_scan_camera(spec: mujoco.MjSpec) -> None:
    """Add the world camera that `render_views` moves to each pose."""
    spec.worldbody.add_camera(name=SCAN_CAMERA, pos=[0, 0, 1], quat=[1, 0, 0, 0])


def render_views(
    model: mujoco.MjModel,
    poses: np.ndarray,
    intr: Intrinsics,
    depth: bool = False,
    hidden_geoms: np.ndarray | None = None,
) -> np.ndarray:
    """Render the model's `recon_scan` camera from each pose.

    poses (N, 4, 4) camera-to-world (OpenCV). Returns (N, H, W, 3) uint8 colour, or
    (N, H, W) float32 depth in metres along the optical axis (0 where nothing is hit).
    `hidden_geoms` are made transparent (e.g. the robot, which a scan never saw).
    """
    cam = model.camera(SCAN_CAMERA).id
    model.cam_fovy[cam] = intr.fovy
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, intr.width)
    model.vis.global_.offheight = max(model.vis.global_.offheight, intr.height)
    if hidden_geoms is not None and len(hidden_geoms):
        model.geom_rgba[hidden_geoms, 3] = 0.0
    data = mujoco.MjData(model)
    renderer = mujoco.Renderer(model, height=intr.height, width=intr.width)
    if depth:
        renderer.enable_depth_rendering()
    far = model.stat.extent * model.vis.map.zfar
    out = []
    try:
        for pose in poses:
            quat = np.zeros(4)
            mujoco.mju_mat2Quat(quat, (pose[:3, :3] @ CV_TO_GL).reshape(-1))
            model.cam_pos[cam] = pose[:3, 3]
            model.cam_quat[cam] = quat
            mujoco.mj_forward(model, data)
            renderer.update_scene(data, camera=cam)
            img = renderer.render().copy()
            if depth:
                img = np.where(img >= 0.99 * far, 0.0, img).astype(np.float32)
            out.append(img)
    finally:
        renderer.close()
    return np.stack(out)
