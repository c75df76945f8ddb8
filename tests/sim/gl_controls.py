"""The warp rig's control scenes against MuJoCo's OpenGL renderer: a scene from MJCF text,
its frame from camera "c" drawn by each (what tests/sim/test_warp_gl_features.py and
test_warp_translucent.py compare)."""

from __future__ import annotations

import mujoco
import numpy as np

from metasim.scene.render_schema import RaytraceSpec
from metasim.sim.warp.probe import render_model


def scene(xml: str) -> tuple[mujoco.MjModel, mujoco.MjData]:
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    return m, d


def opengl(m: mujoco.MjModel, d: mujoco.MjData, size: tuple[int, int]) -> np.ndarray:
    """(H, W, 3) uint8 from camera "c", `size` = (width, height)."""
    with mujoco.Renderer(m, size[1], size[0]) as r:
        r.update_scene(d, camera="c")
        return r.render()


def warp(
    m: mujoco.MjModel, d: mujoco.MjData, size: tuple[int, int], **settings: object
) -> np.ndarray:
    """The warp rig's frame from camera "c" with the ray tracer's `settings`."""
    return render_model(m, d, "c", size, RaytraceSpec.model_validate(settings))
