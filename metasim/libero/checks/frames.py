"""First frames: metasim's render of a camera next to the reference's, and their PSNR."""

from __future__ import annotations

import mujoco
import numpy as np

from metasim.reference import images
from metasim.scene.compile import CompiledScene

CAMERA = "agentview"
SIZE = 256
PSNR_CAP = 100.0  # dB reported for identical frames (the MSE is 0)


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    """PSNR in dB of two uint8 images (H, W, 3); PSNR_CAP when they are equal."""
    return images.psnr(a, b, cap=PSNR_CAP)


def upright(frame: np.ndarray) -> np.ndarray:
    """A reference frame (H, W, 3) in robosuite's OpenGL convention (row 0 at the bottom)
    turned the way `mujoco.Renderer` returns images (row 0 at the top)."""
    return np.ascontiguousarray(frame[::-1])


def render_first_frame(compiled: CompiledScene, data: mujoco.MjData) -> np.ndarray:
    """metasim's `agentview` frame (SIZE, SIZE, 3) uint8 of `data`, row 0 at the top."""
    with mujoco.Renderer(compiled.model, height=SIZE, width=SIZE) as renderer:
        renderer.update_scene(data, camera=CAMERA)
        return renderer.render().copy()
