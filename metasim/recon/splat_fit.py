"""Gaussians from the fused surface, refined against the scan's frames.

`initial_gaussians`: the background's surface points (scene frame, metres) merged on a
grid to at most `max_count`, each a flat Gaussian in the surface's plane (its normal from
the mesh, when there is one) as wide as the local spacing (the mean distance to the 3
nearest neighbours), coloured as the surface, opacity 0.9. `refine`: Adam on every
parameter, one training view per step, L1 photometric loss of `splat_raster.render`
over the object meshes' layer, bounded by a step count and a time budget. `ssim`:
the structural similarity (Gaussian window 11 x 11, sigma 1.5, per channel, averaged).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
from scipy.ndimage import gaussian_filter
from scipy.spatial import cKDTree

from metasim.recon.splat_raster import Camera, Gaussians, render
from metasim.splats import Splats

OPACITY0 = 0.9
FLAT = 0.2  # the normal axis of an initial Gaussian, relative to its width
WIDTH = 0.6  # the width of an initial Gaussian, relative to the mean distance to 3 neighbours
# Adam step sizes per parameter (means: relative to the initial spacing, per step).
LR = {"means": 0.02, "quats": 0.005, "log_scales": 0.01, "colour": 0.03, "opacity": 0.03}


@dataclass
class View:
    """A training or test view: the camera, the frame (H, W, 3) float in [0, 1] and the
    object meshes' layer under the splats (colour (H, W, 3), depth (H, W), 0 = none)."""

    camera: Camera
    image: torch.Tensor
    under: torch.Tensor
    under_depth: torch.Tensor


def _merge_on_grid(
    points: np.ndarray, values: list[np.ndarray], max_count: int, cell: float
) -> tuple[np.ndarray, list[np.ndarray], float]:
    """Average points (and per-point values) per grid cell, the cell grown until at most
    `max_count` cells are occupied. Returns the merged points, values and the cell."""
    while True:
        key = np.floor(points / cell).astype(np.int64)
        _, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
        if len(counts) <= max_count:
            break
        cell *= 1.2
    merged = []
    for arr in [points, *values]:
        sums = np.zeros((len(counts), arr.shape[1]))
        np.add.at(sums, inverse, arr)
        merged.append(sums / counts[:, None])
    return merged[0], merged[1:], cell


def _frame_quats(normals: np.ndarray) -> np.ndarray:
    """(N, 4) w-x-y-z rotations taking +z to each unit normal (N, 3)."""
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(np.broadcast_to(z, normals.shape), normals)
    s = np.linalg.norm(axis, axis=1)
    c = normals @ z
    angle = np.arctan2(s, c)
    axis = np.where(s[:, None] > 1e-9, axis / np.maximum(s, 1e-12)[:, None], [1.0, 0.0, 0.0])
    half = angle / 2
    return np.concatenate([np.cos(half)[:, None], axis * np.sin(half)[:, None]], axis=1)


def initial_gaussians(
    points: np.ndarray,
    colours: np.ndarray,
    normals: np.ndarray | None,
    max_count: int,
    spacing: float,
) -> Gaussians:
    """Gaussians on the surface points (N, 3) with colours (N, 3) in [0, 1] and unit
    normals (N, 3) or None (then round), at most `max_count` of them."""
    values = [colours] + ([normals] if normals is not None else [])
    pts, merged, _ = _merge_on_grid(points, values, max_count, spacing)
    dist = cKDTree(pts).query(pts, k=4)[0][:, 1:]
    width = WIDTH * np.clip(dist.mean(axis=1), 0.5 * spacing, None)
    scales = np.repeat(width[:, None], 3, axis=1)
    if normals is not None:
        nrm = merged[1] / np.maximum(np.linalg.norm(merged[1], axis=1, keepdims=True), 1e-12)
        quats = _frame_quats(nrm)
        scales[:, 2] *= FLAT
    else:
        quats = np.tile([1.0, 0.0, 0.0, 0.0], (len(pts), 1))
    col = np.clip(merged[0], 0.02, 0.98)

    def tensor(a: np.ndarray) -> torch.Tensor:
        return torch.tensor(a, dtype=torch.float32)

    return Gaussians(
        tensor(pts),
        tensor(quats),
        tensor(np.log(scales)),
        tensor(np.log(col / (1 - col))),
        torch.full((len(pts),), math.log(OPACITY0 / (1 - OPACITY0))),
    )


def to_splats(g: Gaussians) -> Splats:
    """The Gaussians as `metasim.splats.Splats` (what `write_splat_ply` writes)."""
    with torch.no_grad():
        q = g.quats / g.quats.norm(dim=1, keepdim=True)
        alpha = torch.sigmoid(g.opacity_logits)[:, None]
        rgba = torch.cat([torch.sigmoid(g.colour_logits), alpha], 1)
        return Splats(
            g.means.numpy().astype(np.float32),
            q.numpy().astype(np.float32),
            torch.exp(g.log_scales).numpy().astype(np.float32),
            rgba.numpy().astype(np.float32),
        )


def from_splats(s: Splats) -> Gaussians:
    """The inverse of `to_splats` (e.g. for a file read back with `read_splat_ply`)."""
    rgba = np.clip(s.rgba.astype(np.float64), 1e-6, 1 - 1e-6)
    logit = np.log(rgba / (1 - rgba))
    return Gaussians(
        torch.tensor(s.position, dtype=torch.float32),
        torch.tensor(s.rotation, dtype=torch.float32),
        torch.tensor(np.log(s.scale), dtype=torch.float32),
        torch.tensor(logit[:, :3], dtype=torch.float32),
        torch.tensor(logit[:, 3], dtype=torch.float32),
    )


def render_view(g: Gaussians, view: View) -> torch.Tensor:
    """(H, W, 3) render of `g` over the view's object layer."""
    return render(g, view.camera, view.under, view.under_depth)


def photometric_loss(g: Gaussians, views: list[View], most: int = 8) -> float:
    """Mean L1 (no gradient) over `views`, or `most` of them spread evenly."""
    pick = np.unique(np.linspace(0, len(views) - 1, min(most, len(views))).round().astype(int))
    with torch.no_grad():
        return float(
            np.mean([float((render_view(g, views[i]) - views[i].image).abs().mean()) for i in pick])
        )


def refine(
    g: Gaussians, views: list[View], steps: int, seconds: float, spacing: float, seed: int = 0
) -> tuple[Gaussians, int]:
    """Adam on `g` against `views` (one per step, in a seeded order) for `steps` steps or
    `seconds`, whichever ends first. Returns the refined Gaussians and the steps run."""
    params = [t.detach().clone().requires_grad_(True) for t in g.tensors()]
    out = Gaussians(*params)
    rates = [LR["means"] * spacing, LR["quats"], LR["log_scales"], LR["colour"], LR["opacity"]]
    opt = torch.optim.Adam([{"params": [p], "lr": lr} for p, lr in zip(params, rates, strict=True)])
    order = np.random.default_rng(seed).permutation(np.resize(np.arange(len(views)), steps))
    t0, done = time.perf_counter(), 0
    for k in order:
        if done and time.perf_counter() - t0 > seconds:
            break
        view = views[int(k)]
        loss = (render_view(out, view) - view.image).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        done += 1
    for p in params:
        p.requires_grad_(False)
    return out, done


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    """Structural similarity of two uint8 images (H, W, 3): Wang et al. 2004's constants,
    a Gaussian window (sigma 1.5, 11 x 11), per channel, averaged over the image."""
    x, y = a.astype(np.float64) / 255.0, b.astype(np.float64) / 255.0
    c1, c2 = 0.01**2, 0.03**2

    def blur(img: np.ndarray) -> np.ndarray:
        return np.asarray(gaussian_filter(img, sigma=(1.5, 1.5, 0), truncate=3.5))

    mx, my = blur(x), blur(y)
    vx, vy, cxy = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
    num = (2 * mx * my + c1) * (2 * cxy + c2)
    den = (mx * mx + my * my + c1) * (vx + vy + c2)
    return float(np.mean(num / den))
