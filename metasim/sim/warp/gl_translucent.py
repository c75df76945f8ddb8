"""OpenGL's translucent geoms in MuJoCo Warp's ray tracer (`render.raytrace.translucent`).

MuJoCo's OpenGL renderer (mjr_render) draws a geom whose alpha is below 0.995 after the
opaque ones, blended over the frame (source alpha, one minus source alpha), depth-tested
against the opaque geoms and writing no depth; both faces of it are drawn, lit alike
(two-sided lighting). Control experiment (docs/log/rendering.md): one box of alpha 0.4
in front of an opaque box: OpenGL's frame is within 60 dB of a x c + (1 - a) x
(a x c + (1 - a) x behind), c the box's own opaque colour (its two faces), 25.6 dB of one
face, 22.2 dB of the ray tracer's opaque box. MuJoCo Warp draws such a geom opaque.

The edited kernel (the render module of metasim.sim.warp.gl_shading with `GLASS_EDITS`,
used only for a model with such a geom, so other scenes keep their kernels and images):
the regular launch and the mirror launch skip the translucent geoms (as they skip alpha
0), then one launch per layer, the farthest first (`LAYERS`: the two faces of one geom),
shades the layer-th translucent surface along each camera ray in front of the first
opaque hit (back faces too, lit as facing the viewer) and stores alpha x its colour +
(1 - alpha) x the stored pixel (rounded). Rays that miss every translucent geom's bounding
sphere return at once. Per pixel the layers are blended in depth order; with several
overlapping translucent geoms OpenGL's order differs (its control: a near box's back
face, then the far box, then the near box's front face), so the blend is exact for one
translucent geom along a ray. Shadow rays still stop at a translucent geom (OpenGL's
shadow map holds it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco

from metasim.sim.warp.gl_reflection import _CAST_ARGS, _PRIMARY_CAST, geom_rgba

OPAQUE = 0.995  # MuJoCo's OpenGL: a geom is translucent below this alpha
LAYERS = 2  # translucent surfaces blended per pixel (a convex geom's two faces)
SPHERES = 4  # at most this many translucent geoms get the bounding-sphere early out

_CAST_OPEN = _CAST_ARGS.replace('wp.static(rc_static["enable_backface_culling"])', "False").replace(
    "ray_origin_world,", "glass_origin,"
)

_SPHERE = (
    "        if wp.static(glass_n > {k}):\n"
    "          glass_oc = glass_origin - geom_xpos_in[worldid, wp.static(glass_ids[{k}])]\n"
    "          glass_b = wp.dot(glass_oc, ray_dir_world)\n"
    "          glass_c = wp.dot(glass_oc, glass_oc) - wp.static(glass_r2[{k}])\n"
    "          glass_a = wp.dot(ray_dir_world, ray_dir_world)\n"
    "          if glass_c <= 0.0 or (glass_b <= 0.0 and glass_b * glass_b >= glass_a * glass_c):\n"
    "            glass_near = True\n"
)

# The blend launch of layer L: rays that miss the translucent geoms' bounding spheres
# return; the L - 1 nearer translucent surfaces are stepped over (the ray returns at an
# opaque hit or none); the primary cast then finds the L-th, without backface culling.
_GLASS_RAY = (
    "    glass_origin = ray_origin_world\n"
    "    glass_t0 = float(0.0)\n"
    "    if wp.static(glass_layer > 0):\n"
    "      if wp.static(glass_n > 0):\n"
    "        glass_near = False\n"
    + "".join(_SPHERE.format(k=k) for k in range(SPHERES))
    + "        if not glass_near:\n"
    "          return\n"
    "      for glass_skip in range(wp.static(glass_layer - 1)):\n"
    "        skip_hit, skip_t, skip_n, su, sv, sf, smesh = cast_ray(\n"
    + _CAST_OPEN.replace("      ", "          ", 1).replace("\n      ", "\n          ")
    + "        if skip_hit < 0:\n"
    "          return\n"
    "        skip_rgba, skip_mat = _geom_rgba(geom_matid, geom_rgba, mat_rgba, worldid, skip_hit)\n"
    "        if skip_rgba[3] >= wp.static(OPAQUE):\n"
    "          return\n"
    "        glass_t0 = glass_t0 + skip_t + 1.0e-4\n"
    "        glass_origin = ray_origin_world + ray_dir_world * glass_t0\n"
)

_GLASS_HIT = (
    "    if wp.static(glass_layer > 0):\n"
    "      if geom_id < 0:\n"
    "        return\n"
    "      glass_rgba, glass_mat = _geom_rgba(geom_matid, geom_rgba, mat_rgba, worldid, geom_id)\n"
    "      if glass_rgba[3] >= wp.static(OPAQUE):\n"
    "        return\n"
    "      dist = dist + glass_t0\n"
)

_STORE = (
    "    store_pixel(worldid, rgb_adr[camid] + rayid_local, hit_color, rgb_out, aa_accum_out)\n"
)
_BLEND = (
    "    if wp.static(glass_layer > 0):\n"
    "      glass_old = int(rgb_out[worldid, rgb_adr[camid] + rayid_local])\n"
    "      glass_under = wp.vec3(\n"
    "        float((glass_old >> 16) & 0xFF),\n"
    "        float((glass_old >> 8) & 0xFF),\n"
    "        float(glass_old & 0xFF),\n"
    "      )\n"
    "      hit_color = hit_color * color[3] + glass_under * ((1.0 - color[3]) / 255.0)\n"
    "      hit_color = wp.min(hit_color + wp.vec3(0.5 / 255.0), wp.vec3(1.0, 1.0, 1.0))\n"
)

_CULL = '      wp.static(rc_static["enable_backface_culling"]),\n    )\n'

GLASS_EDITS = (
    (
        "def _make_cast_ray(geom_ray_types: Tuple[int], first_hit: bool = False) -> wp.Function:\n",
        "def _make_cast_ray(\n"
        "  geom_ray_types: Tuple[int], first_hit: bool = False, skip_glass: bool = False\n"
        ") -> wp.Function:\n",
    ),
    (  # the regular and mirror launches: translucent geoms are drawn by the blend launches
        "        if rgba[3] == 0.0:\n          continue\n",
        "        if rgba[3] == 0.0:\n          continue\n"
        "        if wp.static(skip_glass):\n"
        f"          if rgba[3] < {OPAQUE}:\n"
        "            continue\n",
    ),
    (
        "def _build_megakernel(m: Model, rc: RenderContext, mirror=None, mips=None):\n",
        "def _build_megakernel(m: Model, rc: RenderContext, mirror=None, mips=None, glass=None):\n"
        "  glass_layer, glass_ids, glass_r2 = glass if glass is not None else (0, (), ())\n"
        "  glass_n = len(glass_ids)\n"
        "  glass_ids = tuple(glass_ids) + (0,) * 4\n"
        "  glass_r2 = tuple(glass_r2) + (0.0,) * 4\n",
    ),
    (
        "  cast_ray = _make_cast_ray(geom_ray_types, first_hit=False)\n",
        "  cast_ray = _make_cast_ray(\n"
        "    geom_ray_types, first_hit=False, skip_glass=glass is not None and glass_layer == 0\n"
        "  )\n",
    ),
    (
        _PRIMARY_CAST,
        _GLASS_RAY
        + _PRIMARY_CAST.replace("ray_origin_world,", "glass_origin,").replace(
            _CULL,
            '      wp.static(rc_static["enable_backface_culling"] and glass_layer == 0),\n    )\n',
        )
        + _GLASS_HIT,
    ),
    (  # OpenGL's two-sided lighting of a translucent geom's back faces
        '    if wp.static(not rc_static["enable_backface_culling"]):\n',
        '    if wp.static(not rc_static["enable_backface_culling"] or glass_layer > 0):\n',
    ),
    (_STORE, _BLEND + _STORE),
    (  # the blend launches keep the shadows (a mirror launch has none)
        "def render(m: Model, d: Data, rc: RenderContext, mirror_kernel=None):\n",
        "def render(m: Model, d: Data, rc: RenderContext, mirror_kernel=None, shadows=False):\n",
    ),
    (
        "        rc.use_shadows and mirror_kernel is None,\n",
        "        rc.use_shadows and (mirror_kernel is None or shadows),\n",
    ),
)

OPAQUE_LINE = f"OPAQUE = {OPAQUE}\n"


def glass_source(source: str) -> str | None:
    """The OpenGL-order render module's source with the translucency edits, or None."""
    for old, new in GLASS_EDITS:
        if source.count(old) != 1:
            return None
        source = source.replace(old, new)
    anchor = "def _make_cast_ray("
    return source.replace(anchor, OPAQUE_LINE + "\n\n" + anchor, 1)


@dataclass(frozen=True)
class Glass:
    """The translucent geoms OpenGL blends: their ids and squared bounding-sphere radii
    (none when there are more than `SPHERES` or one is unbounded: no early out)."""

    geoms: tuple[int, ...]
    radius2: tuple[float, ...]

    def statics(self, layer: int) -> tuple[int, tuple[int, ...], tuple[float, ...]]:
        """The kernel's `glass` argument for `layer` (0: the launches that skip them)."""
        if len(self.geoms) > SPHERES or any(r <= 0 for r in self.radius2):
            return (layer, (), ())
        return (layer, self.geoms, self.radius2)


def find_glass(model: mujoco.MjModel, groups: tuple[int, ...] = (0, 1, 2)) -> Glass | None:
    """The translucent geoms (0 < alpha < 0.995) of the drawn `groups`, or None."""
    ids = [
        g
        for g in range(model.ngeom)
        if model.geom_group[g] in groups and 0.0 < geom_rgba(model, g)[3] < OPAQUE
    ]
    if not ids:
        return None
    return Glass(tuple(ids), tuple(float(model.geom_rbound[g]) ** 2 for g in ids))


def glass_kernels(module: Any, wm: Any, rc: Any, glass: Glass, mips: int | None) -> list[Any]:
    """The blend launches' kernels for context `rc`, the farthest layer first (launch each
    with `module.render(wm, d, rc, mirror_kernel=k, shadows=True)` after the others)."""
    return [
        module._build_megakernel(wm, rc, None, mips, glass.statics(layer))
        for layer in range(LAYERS, 0, -1)
    ]


__all__ = [
    "GLASS_EDITS",
    "LAYERS",
    "OPAQUE",
    "Glass",
    "find_glass",
    "glass_kernels",
    "glass_source",
]
