"""CPU densification for the RGB-only path: two-view stereo between neighbouring
registered frames (OpenCV rectification + semi-global block matching) gives a depth map
per frame, which is then fused like sensor depth. Depth is in the units of the poses."""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np

from metasim.recon.camera import Intrinsics


def pair_depth(
    rgb_a: np.ndarray, rgb_b: np.ndarray, pose_a: np.ndarray, pose_b: np.ndarray, intr: Intrinsics
) -> np.ndarray:
    """(H, W) depth of frame a (0 where unknown) from the stereo pair (a, b); poses are
    camera-to-world (OpenCV)."""
    k = intr.matrix
    size = (intr.width, intr.height)
    b_from_a = np.linalg.inv(pose_b) @ pose_a
    rot, t = b_from_a[:3, :3], b_from_a[:3, 3]
    dist = np.zeros(5)
    r1, r2, p1, p2, q, _, _ = cv2.stereoRectify(k, dist, k, dist, size, rot, t, alpha=0)
    ax, ay = cv2.initUndistortRectifyMap(k, dist, r1, p1, size, cv2.CV_32FC1)
    bx, by = cv2.initUndistortRectifyMap(k, dist, r2, p2, size, cv2.CV_32FC1)
    grey_a = cv2.remap(cv2.cvtColor(rgb_a, cv2.COLOR_RGB2GRAY), ax, ay, cv2.INTER_LINEAR)
    grey_b = cv2.remap(cv2.cvtColor(rgb_b, cv2.COLOR_RGB2GRAY), bx, by, cv2.INTER_LINEAR)
    horizontal = abs(p2[0, 3]) >= abs(p2[1, 3])
    offset = p2[0, 3] if horizontal else p2[1, 3]
    if not horizontal:  # rectified along y: match on the transposed images
        grey_a, grey_b = grey_a.T, grey_b.T
    mirror = offset > 0  # b is left of a: mirror both so that a is the left view
    if mirror:
        grey_a, grey_b = grey_a[:, ::-1], grey_b[:, ::-1]
    mag = _sgbm(np.ascontiguousarray(grey_a), np.ascontiguousarray(grey_b))
    if mirror:
        mag = mag[:, ::-1]
    if not horizontal:
        mag = mag.T
    disp = np.ascontiguousarray(-mag if mirror else mag)
    pts = cv2.reprojectImageTo3D(disp, q)  # (H, W, 3) in the rectified frame of a
    ok = (mag > 0.5) & np.isfinite(pts).all(axis=2)
    cam = pts[ok] @ r1  # rectified -> camera a (r1 rotates camera a into rectified)
    return _zbuffer(cam, intr)


def _sgbm(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Disparity (float32, pixels) of a rectified pair; invalid < 0."""
    matcher = cv2.StereoSGBM.create(
        minDisparity=0,
        numDisparities=128,
        blockSize=5,
        P1=8 * 25,
        P2=32 * 25,
        uniquenessRatio=10,
        speckleWindowSize=50,
        speckleRange=2,
        mode=cv2.STEREO_SGBM_MODE_SGBM,
    )
    return np.asarray(matcher.compute(left, right), dtype=np.float32) / 16.0


def _zbuffer(cam: np.ndarray, intr: Intrinsics) -> np.ndarray:
    """Project camera-frame points (N, 3) into a depth image, nearest point per pixel."""
    depth = np.zeros((intr.height, intr.width), dtype=np.float32)
    z = cam[:, 2]
    front = z > 1e-6
    cam, z = cam[front], z[front]
    u = np.round(intr.fx * cam[:, 0] / z + intr.cx).astype(int)
    v = np.round(intr.fy * cam[:, 1] / z + intr.cy).astype(int)
    inside = (u >= 0) & (u < intr.width) & (v >= 0) & (v < intr.height)
    u, v, z = u[inside], v[inside], z[inside]
    order = np.argsort(-z)  # far first, so near points overwrite them
    depth[v[order], u[order]] = z[order]
    return depth


def stereo_depths(
    rgbs: list[np.ndarray],
    poses: np.ndarray,
    intr: Intrinsics,
    gap: int = 2,
    tick: Callable[[], None] | None = None,
) -> list[np.ndarray]:
    """A depth map per frame from the pairs (i, i + gap) and (i, i - gap): their mean where
    both see a pixel and agree within 2 %, nothing elsewhere (one pair alone is too noisy:
    its blobs would become objects)."""
    n = len(rgbs)
    out = []
    for i in range(n):
        ahead = pair_depth(rgbs[i], rgbs[(i + gap) % n], poses[i], poses[(i + gap) % n], intr)
        behind = pair_depth(rgbs[i], rgbs[(i - gap) % n], poses[i], poses[(i - gap) % n], intr)
        agree = (ahead > 0) & (behind > 0) & (np.abs(ahead - behind) < 0.02 * ahead)
        out.append(np.where(agree, (ahead + behind) / 2, 0.0).astype(np.float32))
        if tick:
            tick()
    return out
