"""Ground-truth metrics for the recon tests: centroid error, Chamfer distance, pose error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

from metasim.recon.camera import Intrinsics
from metasim.recon.frame import apply
from metasim.recon.synthetic import TABLETOP, TruthScene, sample_true_surfaces


def visible(
    points: np.ndarray, depths: np.ndarray, poses: np.ndarray, intr: Intrinsics, tol: float = 0.005
) -> np.ndarray:
    """(M,) bool: the point is seen (depth test within `tol`) in at least one frame."""
    seen = np.zeros(len(points), dtype=bool)
    for depth, pose in zip(depths, poses, strict=True):
        w2c = np.linalg.inv(pose)
        cam = points @ w2c[:3, :3].T + w2c[:3, 3]
        z = cam[:, 2]
        ok = z > 1e-3
        u = np.round(intr.fx * cam[:, 0] / np.where(ok, z, 1) + intr.cx).astype(int)
        v = np.round(intr.fy * cam[:, 1] / np.where(ok, z, 1) + intr.cy).astype(int)
        ok &= (u >= 0) & (u < intr.width) & (v >= 0) & (v < intr.height)
        d = np.zeros(len(points))
        d[ok] = depth[v[ok], u[ok]]
        seen |= ok & (d > 0) & (np.abs(d - z) < tol)
    return seen


def chamfer(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Mean nearest-neighbour distance a->b and b->a (m)."""
    return (float(cKDTree(b).query(a)[0].mean()), float(cKDTree(a).query(b)[0].mean()))


def centroid_errors(
    report: dict, scene: TruthScene = TABLETOP, world: np.ndarray | None = None
) -> dict[str, float]:
    """Distance (m) from each true primitive's centre (in the scene frame) to the nearest
    reconstructed object's position; `world` (4x4) maps the truth into the capture's
    world frame."""
    w2s = np.asarray(report["world_to_scene"])
    if world is not None:
        w2s = w2s @ world
    recon = np.array([o["pos"] for o in report["scene"]["objects"]])
    out = {}
    for p in scene.primitives:
        true = apply(w2s, np.asarray([p.pos]))[0]
        out[p.name] = float(np.min(np.linalg.norm(recon - true, axis=1)))
    return out


def load_report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


def true_visible_surfaces(
    depths, poses, intr, scene: TruthScene = TABLETOP
) -> tuple[np.ndarray, np.ndarray]:
    pts, owner = sample_true_surfaces(scene=scene)
    vis = visible(pts, depths, poses, intr)
    return pts[vis], owner[vis]


def umeyama(src: np.ndarray, dst: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Similarity (s, R, t) minimising |s R src + t - dst|^2 over (N, 3) point pairs."""
    mu_s, mu_d = src.mean(0), dst.mean(0)
    xs, xd = src - mu_s, dst - mu_d
    cov = xd.T @ xs / len(src)
    u, d, vt = np.linalg.svd(cov)
    sign = np.eye(3)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        sign[2, 2] = -1
    rot = u @ sign @ vt
    scale = float(np.trace(np.diag(d) @ sign) / xs.var(0).sum())
    return scale, rot, mu_d - scale * rot @ mu_s
