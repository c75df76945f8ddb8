"""Metric scale: from depth (RGB-D), a user-given factor (`--scale`), an ArUco marker of
known side (`--marker-size`, DICT_4X4_50, corners triangulated from the SfM poses), given
poses' own units (RGB frames with poses), or, with none of these, an assumption that is
reported as such."""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from metasim.errors import MetasimInputError
from metasim.recon.camera import Intrinsics

ASSUMED_DISTANCE = 0.6  # m from the cameras to the scene centre, when nothing is known


def resolve_scale(
    kind: str,
    frames: Any,
    poses: np.ndarray,
    intr: Intrinsics,
    opts: Any,
    sparse: np.ndarray | None,
    source: str,
) -> tuple[float, dict[str, Any]]:
    """(metres per scan unit, how it was found)."""
    if kind == "rgbd":
        return 1.0, {"source": "metric, from depth", "factor": 1.0}
    if opts.scale is not None:
        return float(opts.scale), {"source": "given (--scale)", "factor": float(opts.scale)}
    ok = ~np.isnan(poses[:, 0, 0])
    if opts.marker_size is not None:
        side, views = marker_side(frames, poses, intr, ok)
        if side is None:
            raise MetasimInputError(
                source,
                [
                    f"--marker-size was given but no ArUco marker (DICT_4X4_50) was seen in two or "
                    f"more registered frames (seen in {views})"
                ],
            )
        factor = float(opts.marker_size) / side
        return factor, {"source": "ArUco marker", "factor": factor, "marker_views": views}
    if sparse is None:  # RGB frames with given poses (no SfM): their units are the scale
        return 1.0, {
            "source": "the given poses' units, taken as metres (Polycam and Record3D poses are "
            "metric; pass --scale or --marker-size otherwise)",
            "factor": 1.0,
        }
    centres = poses[ok, :3, 3]
    dist = float(np.median(np.linalg.norm(centres - np.median(sparse, axis=0), axis=1)))
    factor = ASSUMED_DISTANCE / max(dist, 1e-9)
    return factor, {
        "source": f"assumed (cameras {ASSUMED_DISTANCE} m from the scene); pass --scale or "
        "--marker-size for a metric scene",
        "factor": factor,
    }


def marker_side(
    frames: Any, poses: np.ndarray, intr: Intrinsics, ok: np.ndarray
) -> tuple[float | None, int]:
    """Mean side of the first ArUco marker seen, in scan units, and how many views saw it."""
    from metasim.recon.inputs import read_rgb

    detector = cv2.aruco.ArucoDetector(cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50))
    seen: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
    for i in np.flatnonzero(ok):
        grey = cv2.cvtColor(read_rgb(frames.image_dir / frames.names[i]), cv2.COLOR_RGB2GRAY)
        corners, ids, _ = detector.detectMarkers(grey)
        if ids is None:
            continue
        w2c = np.linalg.inv(poses[i])
        proj = intr.matrix @ w2c[:3]
        for c, mid in zip(corners, ids.ravel(), strict=True):
            seen.setdefault(int(mid), []).append((proj, c.reshape(4, 2)))
    if not seen:
        return None, 0
    obs = max(seen.values(), key=len)
    if len(obs) < 2:
        return None, len(obs)
    pts = np.stack([_triangulate([(p, uv[k]) for p, uv in obs]) for k in range(4)])
    side = float(np.mean(np.linalg.norm(pts - np.roll(pts, 1, axis=0), axis=1)))
    return side, len(obs)


def _triangulate(obs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Linear (DLT) triangulation of one point from (3x4 projection, (2,) pixel) pairs."""
    rows = []
    for proj, (u, v) in obs:
        rows.append(u * proj[2] - proj[0])
        rows.append(v * proj[2] - proj[1])
    sol = np.linalg.svd(np.asarray(rows))[2][-1]
    return np.asarray(sol[:3] / sol[3])
