"""One camera of a bare MuJoCo model ray traced as the warp rig traces it (`render_model`):
control experiments on small MJCF scenes against MuJoCo's OpenGL (bench/,
tests/sim/test_warp_gl_features.py), without a scene, a handler or an env.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import mujoco
import numpy as np

from metasim.sim.warp.cameras import downsample, single_face_cubes
from metasim.sim.warp.gl_shading import render_module
from metasim.sim.warp.gl_sites import place_site_geoms, with_sites
from metasim.sim.warp.trace import prepare_context, scene_glass, trace

if TYPE_CHECKING:
    from metasim.scene.render_schema import RaytraceSpec


def render_model(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    camera: str,
    size: tuple[int, int],
    settings: RaytraceSpec,
    device: str = "cpu",
    spec: mujoco.MjSpec | None = None,
) -> np.ndarray:
    """(H, W, 3) uint8: camera `camera` of one world in state `data` (kinematics done),
    ray traced at `size` (W, H) with `settings` as the warp rig traces it (n x the size,
    the n x n blocks averaged, n = `settings.samples_per_pixel`). With the `spec` the
    model was compiled from, its sites are drawn as the rig draws them (`settings.sites`)."""
    import mujoco_warp as mjw
    import warp as wp

    sites = with_sites(model, spec) if settings.sites else None
    if sites is not None:  # the render model's data: the same positions
        drawn = mujoco.MjData(sites.model)
        drawn.qpos[:], drawn.mocap_pos[:], drawn.mocap_quat[:] = (
            data.qpos, data.mocap_pos, data.mocap_quat
        )  # fmt: skip
        model, data = sites.model, drawn
        mujoco.mj_kinematics(model, data)

    glass = scene_glass(model, settings)
    module = render_module(glass is not None) if settings.shading == "opengl" else None
    n, (w, h) = settings.samples_per_pixel, size
    with wp.ScopedDevice(device):
        wm, wd = mjw.put_model(model), mjw.put_data(model, data)
        rc = mjw.create_render_context(
            model,
            cam_res=[(w * n, h * n)],
            render_rgb=[True],
            render_depth=[False],
            render_seg=[False],
            cam_active=[camera],
            use_shadows=settings.shadows,
            shadow_light_fraction=settings.shadow_fraction,
            enable_specular=settings.specular,
            render_skybox=settings.skybox,
        )
        single_face_cubes(model, rc)
        passes = prepare_context(model, wm, rc, settings, module, n, glass)
        mjw.kinematics(wm, wd)  # as the rig: kinematics, then cameras and lights
        mjw.com_pos(wm, wd)
        if sites is not None:
            place_site_geoms(sites, wm, wd)
        mjw.camlight(wm, wd)
        mjw.refit_bvh(wm, wd, rc)
        trace(mjw.render if module is None else module.render, wm, wd, rc, passes)
        packed = rc.rgb_data.numpy()[0, : w * n * h * n]
    bgra = packed.view(np.uint8).reshape(1, h * n, w * n, 4)
    return downsample(bgra, n)[0]


__all__ = ["render_model"]
