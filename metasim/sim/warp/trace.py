"""What the warp rig adds to a MuJoCo Warp render context for OpenGL's look (the rig and
metasim.sim.warp.probe's `render_model` use it).

`prepare_context` gives a context OpenGL's mipmaps (metasim.sim.warp.gl_mipmaps) and
returns the kernel of OpenGL's planar reflection (metasim.sim.warp.gl_reflection), per
the scene's `render.raytrace` settings; `trace` renders a context (the regular launch,
then the mirror launch that adds the reflection).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import mujoco

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


__all__ = ["prepare_context", "trace"]
