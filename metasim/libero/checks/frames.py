"""First frames: metasim's render of a camera, and the reference's turned upright to
compare with it (`metasim.reference.images.psnr`)."""

from __future__ import annotations

import mujoco
import numpy as np

from metasim.scene.compile import CompiledScene

CAMERA = "agentview"
SIZE = 256


def upright(frame: np.ndarray) -> np.ndarray:
    """A reference frame (H, W, 3) in robosuite's OpenGL convention (row 0 at the bottom)
    turned the way `mujoco.Renderer` returns images (row 0 at the top)."""
    return np.ascontiguousarray(frame[::-1])


def render_first_frame(compiled: CompiledScene, data: mujoco.MjData) -> np.ndarray:
    """metasim's `agentview` frame (SIZE, SIZE, 3) uint8 of `data`, row 0 at the top."""
    with mujoco.Renderer(compiled.model, height=SIZE, width=SIZE) as renderer:
        renderer.update_scene(data, camera=CAMERA)
        return renderer.render().copy()
