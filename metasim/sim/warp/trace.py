"""What the warp rig adds to a MuJoCo Warp render context for OpenGL's look (the rig and
metasim.sim.warp.probe's `render_model` use it).

`prepare_context` gives a context OpenGL's mipmaps (metasim.sim.warp.gl_mipmaps) and
returns the kernels of the launches after the regular one: OpenGL's planar reflection
(metasim.sim.warp.gl_reflection) and its translucent geoms (metasim.sim.warp.gl_translucent),
per the scene's `render.raytrace` settings; `trace` renders a context (the regular launch,
then the mirror launch that adds the reflection, then the blend launches).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import mujoco

from metasim.sim.warp.gl_mipmaps import attach_mipmaps
from metasim.sim.warp.gl_reflection import find_mirror, mirror_kernel
from metasim.sim.warp.gl_translucent import Glass, find_glass, glass_kernels

if TYPE_CHECKING:
    from metasim.scene.render_schema import RaytraceSpec


@dataclass(frozen=True)
class Passes:
    """The launches after a context's regular one: the mirror kernel (or None) and the
    blend kernels of the translucent layers, the farthest first (none without)."""

    mirror: Any = None
    glass: tuple[Any, ...] = ()


def scene_glass(drawn: mujoco.MjModel, settings: RaytraceSpec) -> Glass | None:
    """The translucent geoms the rig blends as OpenGL does (`settings.translucent`, with
    OpenGL's shading order), or None: the scene then keeps its kernels and images."""
    if not settings.translucent or settings.shading != "opengl":
        return None
    return find_glass(drawn)


def prepare_context(
    model: mujoco.MjModel,
    wm: Any,
    rc: Any,
    settings: RaytraceSpec,
    module: ModuleType | None,
    ss: int,
    glass: Glass | None = None,
) -> Passes | None:
    """Mip levels on `rc` (with `settings.mipmaps`; `ss` sub-pixels per pixel side, for
    the footprint of a pixel of the final image) and the later launches' kernels, or None
    (no reflective geom, `settings.reflections` off, no `glass`, or MuJoCo Warp's own
    shading). With `glass` (`scene_glass`), `module` is `render_module(translucent=True)`."""
    if module is None:
        return None
    mips = ss if settings.mipmaps else None
    if settings.mipmaps:
        attach_mipmaps(model, rc)
    skip = None if glass is None else glass.statics(0)
    if settings.mipmaps or skip is not None:
        rc._megakernel = module._build_megakernel(wm, rc, None, mips, *([skip] if skip else []))
    mirror = find_mirror(model) if settings.reflections else None
    kernel = None if mirror is None else mirror_kernel(module, wm, rc, mirror, skip)
    blends = () if glass is None else tuple(glass_kernels(module, wm, rc, glass, mips))
    return Passes(kernel, blends) if kernel is not None or blends else None


def trace(render: Any, wm: Any, wd: Any, rc: Any, passes: Passes | None) -> None:
    """One render of context `rc` with `render` (the module's), then the reflection and
    the translucent layers."""
    render(wm, wd, rc)
    if passes is None:
        return
    if passes.mirror is not None:
        render(wm, wd, rc, mirror_kernel=passes.mirror)
    for kernel in passes.glass:
        render(wm, wd, rc, mirror_kernel=kernel, shadows=True)


__all__ = ["Passes", "prepare_context", "scene_glass", "trace"]
