"""MuJoCo Warp's ray tracer with OpenGL's shading order, for image parity with MuJoCo's renderer.

MuJoCo's OpenGL renderer lights with the fixed-function pipeline: the lit colour
(emission + ambient + diffuse + specular of every light) is clamped to [0, 1] per
channel, then multiplied by the texture (GL_MODULATE, specular not kept apart), and a
material of shininess 0 has a flat specular (pow(n.h, 0) = 1). MuJoCo Warp's shader
multiplies the texture into the base colour first, adds the specular after and clamps
last, and skips the specular at shininess 0: a textured surface under bright lights
(LIBERO's kitchens: a directional light of 0.8 plus two spots) saturates to white where
OpenGL shows the texture (docs/log/rendering.md has the PSNR before and after), and LIBERO's
table (specular 0.2, shininess 0) is darker than OpenGL's. A light that casts shadows
(with shadows on) OpenGL draws in a pass of its own after the others, clamped alone and
added to the frame (blend ONE, ONE): clamp(lit) x texture + clamp(own lit) x texture x
lit-or-shadowed, which goes brighter than the texture where the other lights saturate
(Meta-World's floor, brighter than its texture); the edited kernel sums it so, and an
occluded point gets `shadow_fraction` of it (OpenGL: 0). `render_module()` returns a
copy of MuJoCo Warp's render module whose megakernel follows OpenGL's order; it is made
from the installed module's source with a few line edits (written to a cache file, since
Warp compiles a kernel from its source file). If the source no longer has the edited
lines (another MuJoCo Warp version) it returns None, and the rig renders with MuJoCo
Warp's own order (its images then differ more from OpenGL's; docs/rendering.md). The
edits of OpenGL's planar reflection are metasim.sim.warp.gl_reflection's, those of its
translucent geoms metasim.sim.warp.gl_translucent's.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

from metasim.sim.warp.gl_mipmaps import mip_source
from metasim.sim.warp.gl_reflection import MIRROR_EDITS
from metasim.sim.warp.gl_translucent import glass_source
from metasim.sim.warp.ray_sets import RAY_EDITS

# (MuJoCo Warp's line, OpenGL's order): the texture and the specular kept apart, then
# clamp(lit + specular) * texture
EDITS = (
    (
        "          base_color = wp.cw_mul(base_color, tex_color)\n",
        "          tex_rgb = wp.vec3(tex_color[0], tex_color[1], tex_color[2])\n",
    ),
    (
        '    if wp.static(rc_static["use_textures"]):\n      if mat_id >= 0:\n',
        "    tex_rgb = wp.vec3(1.0, 1.0, 1.0)\n    spec_sum = wp.vec3(0.0, 0.0, 0.0)\n"
        "    shadow_sum = wp.vec3(0.0, 0.0, 0.0)\n"
        '    if wp.static(rc_static["use_textures"]):\n      if mat_id >= 0:\n',
    ),
    (  # OpenGL draws each shadow-casting light in a pass of its own, clamped, added after
        "      result = result + wp.cw_mul(base_color, diff_rgb) + spec_rgb\n",
        "      if use_shadows and light_castshadow_worldid[light_index]:\n"
        "        own = diff_rgb\n"
        '        if wp.static(rc_static["enable_per_light_ambient"]):\n'
        "          own = own + light_ambient[worldid % light_ambient.shape[0], light_index]\n"
        "        own_rgb = wp.min(wp.cw_mul(base_color, own) + spec_rgb, wp.vec3(1.0, 1.0, 1.0))\n"
        "        shadow_sum = shadow_sum + wp.cw_mul(own_rgb, tex_rgb)\n"
        "      else:\n"
        "        result = result + wp.cw_mul(base_color, diff_rgb)\n"
        "        spec_sum = spec_sum + spec_rgb\n",
    ),
    (  # the shadow-casting lights' ambient is part of their own pass
        "          if light_active[worldid % light_active.shape[0], light_index]:\n",
        "          if light_active[worldid % light_active.shape[0], light_index] and not (\n"
        "            use_shadows\n"
        "            and light_castshadow[worldid % light_castshadow.shape[0], light_index]\n"
        "          ):\n",
    ),
    (
        "      result = result + wp.cw_mul(base_color, hl_diff) + hl_spec\n",
        "      result = result + wp.cw_mul(base_color, hl_diff)\n"
        "      spec_sum = spec_sum + hl_spec\n",
    ),
    (  # OpenGL: shininess 0 is pow(n.h, 0) = 1, a flat specular wherever the light reaches
        "      if mat_spec > 0.0 and mat_shin_exp > 0.0:\n",
        "      if mat_spec > 0.0:\n",
    ),
    (
        "    hit_color = wp.min(result, wp.vec3(1.0, 1.0, 1.0))\n",
        "    hit_color = wp.cw_mul(wp.min(result + spec_sum, wp.vec3(1.0, 1.0, 1.0)), tex_rgb)\n"
        "    hit_color = wp.min(hit_color + shadow_sum, wp.vec3(1.0, 1.0, 1.0))\n",
    ),
)


def patched_source(source: str) -> str | None:
    """MuJoCo Warp's render module source with OpenGL's texture order (and per-world
    ray sets, `metasim.sim.warp.ray_sets`), or None if any edited line is missing or not
    unique."""
    for old, new in EDITS + MIRROR_EDITS + RAY_EDITS:
        if source.count(old) != 1:
            return None
        source = source.replace(old, new)
    return mip_source(source)


@cache
def render_module(translucent: bool = False) -> ModuleType | None:
    """The render module with OpenGL's texture order (its `render(m, d, rc)` replaces
    `mujoco_warp.render`), or None where the installed MuJoCo Warp cannot be edited.
    `translucent`: also OpenGL's translucent geoms (metasim.sim.warp.gl_translucent; a
    module of its own, for the models that have such a geom)."""
    from mujoco_warp._src import render

    source = patched_source(inspect.getsource(render))
    if source is not None and translucent:
        source = glass_source(source)
    if source is None:
        return None
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    folder = Path.home() / ".cache" / "metasim" / "warp_render"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"render_gl_{digest}.py"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_text(source)
        tmp.replace(path)
    name = f"metasim_warp_render_gl_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


__all__ = ["EDITS", "patched_source", "render_module"]
