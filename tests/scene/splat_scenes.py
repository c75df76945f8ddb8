"""A tiny scene with a scanned background for the splat tests: a camera at (0, 3, 2)
looking along +y; a red box at y = 5 in front of the background's centre (y = 6); a
grey wall at y = 7 (the mesh fallback). Splat files of one flat, nearly opaque splat."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metasim.splats import Splats, write_splat_ply

SCENE = """name: splat_probe
{background}
objects:
  - {{name: box, shape: box, size: [0.1, 0.1, 0.1], pos: [0, 5, 2], free: false,
     rgba: [1, 0, 0, 1]}}
  - {{name: wall, shape: box, size: [2, 0.05, 2], pos: [0, 7, 2], free: false,
     collide: false, rgba: [0.5, 0.5, 0.5, 1]}}
cameras:
  - {{name: cam, pos: [0, 3, 2], look_at: [0, 6, 2], fovy: 40, width: 24, height: 24}}
task:
  instruction: nothing to do
  success: {{lifted: {{object: box, height: 1.0}}}}
"""
BACKGROUND = "background: {splats: %s, pos: [0, 6, 2], fallback: wall}"


def one_splat(rgb: tuple[float, float, float]) -> Splats:
    """One splat at the origin, flat in its x-z plane (0.6 m std dev), colour `rgb`."""
    return Splats(
        np.zeros((1, 3), np.float32),
        np.array([[1.0, 0.0, 0.0, 0.0]], np.float32),
        np.array([[0.6, 0.05, 0.6]], np.float32),
        np.array([[*rgb, 0.999]], np.float32),
    )


def write_scene(folder: Path, ply: str | None = "green.ply") -> Path:
    """scene.yaml (with the background `ply`, or none) and green.ply / blue.ply."""
    write_splat_ply(folder / "green.ply", one_splat((0.0, 1.0, 0.0)))
    write_splat_ply(folder / "blue.ply", one_splat((0.0, 0.0, 1.0)))
    path = folder / "scene.yaml"
    path.write_text(SCENE.format(background=BACKGROUND % ply if ply else ""))
    return path
