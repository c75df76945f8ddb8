"""OpenGL's planar reflection in MuJoCo Warp's ray tracer (`render.raytrace.reflections`).

MuJoCo's OpenGL renderer (mjr_render) reflects in one geom per scene: the first geom, in
geom order among the drawn ones, that is a plane or a box, opaque (alpha >= 0.995) and
whose material has reflectance > 0 (a box reflects in its +Z face). Before the regular
pass it draws the scene mirrored about that plane, clipped to the plane's side, inside
the plane's outline (a stencil), with every geom's colour times the reflectance (the
specular not), every light on (also the shadow-casting ones, without shadows) and a black
background; the plane's own lit colour is then added to it (blend ONE, ONE), and the
frame buffer clamps. Nothing is reflected where the camera is behind the plane.

The ray tracer does the same with one more launch per view group: a variant of the
render kernel (`mirror_kernel`) that, for each pixel whose camera ray hits the mirror
geom's reflecting face, shades the hit of the reflected ray with the colours times the
reflectance and no shadows, and adds it to the pixel the regular launch stored (a
reflected ray that hits nothing adds black). Shading a real point seen along the
reflected ray with the real lights is what OpenGL's mirrored scene with mirrored lights
shows, so the lights are left as they are. `MIRROR_EDITS` are the lines of MuJoCo Warp's
render module this needs (applied with OpenGL's shading order, metasim.sim.warp.gl_shading).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

# Geom colours MuJoCo uses when a geom names a material: the material's, unless the geom
# sets its own rgba (anything but the default grey).
DEFAULT_GEOM_RGBA = (0.5, 0.5, 0.5, 1.0)

_CAST_ARGS = """      geom_type,
      geom_dataid,
      geom_matid,
      geom_size,
      geom_rgba,
      flex_vertadr,
      flex_edge,
      flex_radius,
      mat_rgba,
      geom_xpos_in,
      geom_xmat_in,
      flexvert_xpos_in,
      bvh_id,
      group_root[worldid],
      worldid,
      bvh_ngeom,
      bvh_nflexgeom,
      enabled_geom_ids,
      mesh_bvh_id,
      hfield_bvh_id,
      flex_rgba,
      flex_geom_flexid,
      flex_geom_edgeid,
      flex_bvh_id,
      flex_group_root,
      ray_origin_world,
      ray_dir_world,
      max_cam_dist,
      wp.static(rc_static["enable_backface_culling"]),
    )
"""

_PRIMARY_CAST = "    geom_id, dist, normal, u, v, f, mesh_id = cast_ray(\n" + _CAST_ARGS

# In the mirror variant: the camera ray's hit on the mirror's face becomes the origin of
# the reflected ray, which the rest of the kernel shades (nothing where it misses).
_MIRROR_RAY = (
    "    if wp.static(reflect):\n"
    "      mirror_mat = geom_xmat_in[worldid, wp.static(mirror_geom)]\n"
    "      mirror_n = wp.vec3(mirror_mat[0, 2], mirror_mat[1, 2], mirror_mat[2, 2])\n"
    "      mirror_p = geom_xpos_in[worldid, wp.static(mirror_geom)]\n"
    "      mirror_p = mirror_p + mirror_n * wp.static(mirror_lift)\n"
    "      if wp.dot(ray_origin_world - mirror_p, mirror_n) <= 0.0:\n"
    "        return\n"
    "      mirror_den = wp.dot(ray_dir_world, mirror_n)\n"
    "      if mirror_den >= 0.0:\n"
    "        return\n"
    "      if wp.static(mirror_hx > 0.0):\n"  # a finite face: rays that miss it need no cast
    "        mirror_t0 = wp.dot(mirror_p - ray_origin_world, mirror_n) / mirror_den\n"
    "        mirror_q = ray_origin_world + ray_dir_world * mirror_t0 - mirror_p\n"
    "        mirror_q = wp.transpose(mirror_mat) @ mirror_q\n"
    "        if wp.abs(mirror_q[0]) > wp.static(mirror_hx * 1.001):\n"
    "          return\n"
    "        if wp.abs(mirror_q[1]) > wp.static(mirror_hy * 1.001):\n"
    "          return\n"
    "      mirror_hit, mirror_t, mirror_normal, mu, mv, mf, mmesh = cast_ray(\n"
    + _CAST_ARGS.replace("      ", "        ", 1).replace("\n      ", "\n        ")
    + "      if mirror_hit != wp.static(mirror_geom):\n"
    "        return\n"
    "      if wp.dot(mirror_normal, mirror_n) < 0.99:\n"
    "        return\n"
    "      ray_origin_world = ray_origin_world + ray_dir_world * mirror_t + mirror_n * 1.0e-4\n"
    "      ray_dir_world = ray_dir_world - mirror_n * (2.0 * wp.dot(ray_dir_world, mirror_n))\n"
    "      max_cam_dist = float(MJ_MAXVAL)\n"
)

_STORE = (
    "      rgb_out[worldid, adr] = pack_rgba_to_uint32("
    "color[0] * 255.0, color[1] * 255.0, color[2] * 255.0, 255.0)\n"
)
_STORE_ADD = (
    "      if wp.static(reflect):\n"
    "        old = int(rgb_out[worldid, adr])\n"
    "        rgb_out[worldid, adr] = pack_rgba_to_uint32(\n"
    "          wp.min(float((old >> 16) & 0xFF) + color[0] * 255.0 + 0.5, 255.0),\n"
    "          wp.min(float((old >> 8) & 0xFF) + color[1] * 255.0 + 0.5, 255.0),\n"
    "          wp.min(float(old & 0xFF) + color[2] * 255.0 + 0.5, 255.0),\n"
    "          255.0,\n"
    "        )\n"
    "      else:\n  " + _STORE
)

MIRROR_EDITS = (
    (
        "def _build_megakernel(m: Model, rc: RenderContext):\n",
        "def _build_megakernel(m: Model, rc: RenderContext, mirror=None):\n"
        "  reflect = mirror is not None\n"
        "  mirror_geom, mirror_lift, mirror_reflectance, mirror_hx, mirror_hy = (\n"
        "    mirror if reflect else (0, 0.0, 0.0, 0.0, 0.0)\n"
        "  )\n",
    ),
    (_STORE, _STORE_ADD),
    (_PRIMARY_CAST, _MIRROR_RAY + _PRIMARY_CAST),
    (  # a reflected ray that hits nothing adds black
        "    # Early Out\n    if geom_id == -1:\n",
        "    # Early Out\n    if wp.static(reflect):\n      if geom_id == -1:\n        return\n"
        "    if geom_id == -1:\n",
    ),
    (  # the reflected scene's colours times the reflectance (emission too; specular not)
        "    mat_spec = DEFAULT_MAT_SPECULAR\n",
        "    if wp.static(reflect):\n"
        "      base_color = base_color * wp.static(mirror_reflectance)\n"
        "    mat_spec = DEFAULT_MAT_SPECULAR\n",
    ),
    (  # render(m, d, rc, mirror_kernel): the mirror launch adds colour, writes no depth
        "def render(m: Model, d: Data, rc: RenderContext):\n",
        "def render(m: Model, d: Data, rc: RenderContext, mirror_kernel=None):\n",
    ),
    (
        "  rc.seg_data.fill_(wp.vec2i(-1, -1))\n",
        "  if mirror_kernel is None:\n    rc.seg_data.fill_(wp.vec2i(-1, -1))\n",
    ),
    (
        "  _render_megakernel = rc._megakernel\n",
        "  _render_megakernel = rc._megakernel if mirror_kernel is None else mirror_kernel\n"
        "  off = None if mirror_kernel is None else wp.zeros_like(rc.render_depth)\n",
    ),
    ("        rc.use_shadows,\n", "        rc.use_shadows and mirror_kernel is None,\n"),
    ("        rc.render_depth,\n", "        rc.render_depth if off is None else off,\n"),
    ("        rc.render_seg,\n", "        rc.render_seg if off is None else off,\n"),
)


@dataclass(frozen=True)
class Mirror:
    """The geom OpenGL reflects in: its id, the lift of its reflecting face above the
    geom's origin along its Z axis (a box: size[2]; a plane: 0), its reflectance and the
    face's half-sizes along X and Y (0: an infinite plane)."""

    geom: int
    lift: float
    reflectance: float
    half: tuple[float, float] = (0.0, 0.0)


def geom_rgba(model: mujoco.MjModel, g: int) -> np.ndarray:
    """The colour MuJoCo draws geom `g` with: the material's unless the geom sets its own."""
    mat = model.geom_matid[g]
    if mat >= 0 and np.allclose(model.geom_rgba[g], DEFAULT_GEOM_RGBA):
        return np.asarray(model.mat_rgba[mat])
    return np.asarray(model.geom_rgba[g])


def find_mirror(model: mujoco.MjModel, groups: tuple[int, ...] = (0, 1, 2)) -> Mirror | None:
    """The first geom (in geom order, among the drawn `groups`) that OpenGL reflects in,
    or None: a plane or box, opaque, whose material's reflectance is > 0."""
    kinds = (int(mujoco.mjtGeom.mjGEOM_PLANE), int(mujoco.mjtGeom.mjGEOM_BOX))
    for g in range(model.ngeom):
        mat = model.geom_matid[g]
        if model.geom_group[g] not in groups or model.geom_type[g] not in kinds or mat < 0:
            continue
        if model.mat_reflectance[mat] <= 0 or geom_rgba(model, g)[3] < 0.995:
            continue
        box = model.geom_type[g] == int(mujoco.mjtGeom.mjGEOM_BOX)
        lift = float(model.geom_size[g][2]) if box else 0.0
        half = (float(model.geom_size[g][0]), float(model.geom_size[g][1]))
        return Mirror(g, lift, float(model.mat_reflectance[mat]), half)
    return None


def mirror_kernel(module: Any, wm: Any, rc: Any, mirror: Mirror, glass: Any = None) -> Any:
    """The render kernel's mirror variant for context `rc` (launch it with
    `module.render(wm, d, rc, mirror_kernel=...)` after the regular render); `glass`: the
    translucency module's argument that skips translucent geoms (gl_translucent)."""
    statics = (mirror.geom, mirror.lift, mirror.reflectance, *mirror.half)
    if glass is None:
        return module._build_megakernel(wm, rc, statics)
    return module._build_megakernel(wm, rc, statics, None, glass)


__all__ = ["MIRROR_EDITS", "Mirror", "find_mirror", "geom_rgba", "mirror_kernel"]
