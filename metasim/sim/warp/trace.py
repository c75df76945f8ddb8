"""What the warp rig adds to a MuJoCo Warp render context for OpenGL's look, and one camera
of a bare MuJoCo model traced the same way (`render_model`: control experiments on small
MJCF scenes, bench/ and tests/sim/test_warp_gl_features.py).

`prepare_context` gives a context OpenGL's mipmaps (metasim.sim.warp.gl_mipmaps) and
returns the kernel of OpenGL's planar reflection (metasim.sim.warp.gl_reflection), per
the scene's `render.raytrace` settings; `trace` renders a context (the regular launch,
then the mirror launch that adds the reflection).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import mujoco
import numpy as np

from metasim.sim.warp.gl_mipmaps import attach_mipmaps
from metasim.sim.warp.gl_reflection import find_mirror, mirror_kernel

if TYPE_CHECKING:
    from metasim.scene.render_schema import RaytraceSpec


def prepare_context(
    model: mujoco.MjModel,
    wm: Any,
    rc: Any,
    settings: RaytraceSpec,
    module: ModuleType | None,
    ss: int,
) -> Any:
    """Mip levels on `rc` (with `settings.mipmaps`; `ss` sub-pixels per pixel side, for
    the footprint of a pixel of the final image) and the mirror kernel, or None (no
    reflective geom, `settings.reflections` off, or MuJoCo Warp's own shading)."""
    if module is None:
        return None
    if settings.mipmaps:
        attach_mipmaps(model, rc)
        rc._megakernel = module._build_megakernel(wm, rc, None, ss)
    mirror = find_mirror(model) if settings.reflections else None
    return None if mirror is None else mirror_kernel(module, wm, rc, mirror)


def trace(render: Any, wm: Any, wd: Any, rc: Any, mirror: Any) -> None:
    """One render of context `rc` with `render` (the module's), then the reflection."""
    render(wm, wd, rc)
    if mirror is not None:
        render(wm, wd, rc, mirror_kernel=mirror)


def render_model(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    camera: str,
    size: tuple[int, int],
    settings: RaytraceSpec,
    device: str = "cpu",
) -> np.ndarray:
    """(H, W, 3) uint8: camera `camera` of one world in state `data` (kinematics done),
    ray traced at `size` (W, H) with `settings` as the warp rig traces it (n x the size,
    the n x n blocks averaged, n = `settings.samples_per_pixel`)."""
    import mujoco_warp as mjw
    import warp as wp

    from metasim.sim.warp.cameras import downsample, single_face_cubes
    from metasim.sim.warp.gl_shading import render_module

    module = render_module() if settings.shading == "opengl" else None
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
        mirror = prepare_context(model, wm, rc, settings, module, n)
        mjw.refit_bvh(wm, wd, rc)
        trace(mjw.render if module is None else module.render, wm, wd, rc, mirror)
        packed = rc.rgb_data.numpy()[0, : w * n * h * n]
    bgra = packed.view(np.uint8).reshape(1, h * n, w * n, 4)
    return downsample(bgra, n)[0]


__all__ = ["prepare_context", "render_model", "trace"]
