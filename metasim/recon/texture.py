"""Bake a mesh's vertex colours into a texture atlas, since MuJoCo draws textures but not
vertex colours. Every triangle gets its own square cell in which its three vertex
colours are interpolated (a right triangle on the cell's lower-left half, UVs kept half
a texel inside so that filtering never reads a neighbour's cell)."""

from __future__ import annotations

import math

import numpy as np
from PIL import Image

from metasim.recon.objects import MeshData

CELL = 6  # texels per cell side


def bake_atlas(mesh: MeshData, cell: int = CELL) -> tuple[np.ndarray, Image.Image]:
    """UVs (F * 3, 2), per face corner in face order, and the RGB atlas image."""
    n = max(len(mesh.faces), 1)
    per_row = math.ceil(math.sqrt(n))
    size = per_row * cell
    img = np.zeros((size, size, 3), dtype=np.float32)
    # Barycentric weights of the cell's texels for corners (0,0), (1,0), (0,1).
    t = (np.arange(cell) + 0.5) / cell
    a, b = np.meshgrid(t, t)  # a along u (columns), b along v (rows, upwards)
    scale = 1.0 - 1.0 / cell  # corners sit half a texel inside the cell
    a, b = (a - 0.5 / cell) / scale, (b - 0.5 / cell) / scale
    over = a + b > 1.0
    total = np.maximum(a + b, 1e-9)
    a, b = np.where(over, a / total, a), np.where(over, b / total, b)
    w0, w1, w2 = np.clip(1 - a - b, 0, 1), np.clip(a, 0, 1), np.clip(b, 0, 1)
    cols = mesh.colors[mesh.faces]  # (F, 3 corners, 3)
    cells = (
        w0[None, :, :, None] * cols[:, None, None, 0]
        + w1[None, :, :, None] * cols[:, None, None, 1]
        + w2[None, :, :, None] * cols[:, None, None, 2]
    )  # (F, cell rows (v up), cell cols, 3)
    idx = np.arange(len(mesh.faces))
    row, col = idx // per_row, idx % per_row
    # Image row 0 is the top (v = 1); cell rows count upwards, so flip them.
    for f in range(len(mesh.faces)):
        y0 = size - (row[f] + 1) * cell
        x0 = col[f] * cell
        img[y0 : y0 + cell, x0 : x0 + cell] = cells[f, ::-1]
    u0 = (col * cell + 0.5) / size
    v0 = (row * cell + 0.5) / size
    span = (cell - 1) / size
    uv = np.stack(
        [
            np.stack([u0, v0], axis=1),
            np.stack([u0 + span, v0], axis=1),
            np.stack([u0, v0 + span], axis=1),
        ],
        axis=1,
    ).reshape(-1, 2)
    atlas = Image.fromarray((np.clip(img, 0, 1) * 255).astype(np.uint8))
    return uv, atlas
