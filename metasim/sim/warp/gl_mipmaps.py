"""OpenGL's mipmapped texture filtering in MuJoCo Warp's ray tracer (`render.raytrace.mipmaps`).

MuJoCo's OpenGL renderer samples its 2D textures through mipmaps (trilinear: two box-
filtered levels, each bilinear, blended by the level of detail), where MuJoCo Warp
samples the full-size texture bilinearly: a wood or tile texture far away or at a grazing
angle shows its fine grain under the ray tracer (aliased, averaged only over the rig's
sub-pixel samples) and its mean colour under OpenGL. Here each texture gets its levels
(`attach_mipmaps`: 2x2 box averages, as glGenerateMipmap) and the render kernel picks
them as OpenGL does: the texture coordinates of the hit and of the points where the
rays of the next pixel right and down meet the hit's tangent plane (the screen
derivatives of a pixel of the final image, not of a sub-pixel sample) give the footprint
rho in texels, the larger of the two; the level of detail is log2(rho), blended between
the two nearest levels (the full-size texture below 0). Mesh textures (coordinates
interpolated in the hit triangle) keep the full-size texture; reflected rays too.
`MIP_EDITS` are the lines of MuJoCo Warp's render module this needs.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np
import warp as wp
from mujoco_warp._src.render_util import texture_pixels

_MAP_START = "    local = wp.transpose(rot) @ (hit_point - pos)\n"
_MAP_END = "    u = uv[0] * repeat[0] + offset[0]\n    v = uv[1] * repeat[1] + offset[1]\n"
_SAMPLE = (
    "    u = u - wp.floor(u)\n"
    "    v = v - wp.floor(v)\n"
    "    tex_color = wp.texture_sample(tex, wp.vec2(u, v), dtype=wp.vec4)\n"
)

# The texture mapping run at the hit and at its two neighbours on the tangent plane.
_LOOP_HEAD = (
    "    u = float(0.0)\n    v = float(0.0)\n"
    "    dux = float(0.0)\n    dvx = float(0.0)\n    duy = float(0.0)\n    dvy = float(0.0)\n"
    "    for k in range(wp.static(3 if mip_on else 1)):\n"
    "      repeat = tex_repeat\n"
    "      point = hit_point\n"
    "      if k == 1:\n        point = hit_point + dpx\n"
    "      if k == 2:\n        point = hit_point + dpy\n"
    "      local = wp.transpose(rot) @ (point - pos)\n"
)
_LOOP_TAIL = (
    "      uu = uv[0] * repeat[0] + offset[0]\n"
    "      vv = uv[1] * repeat[1] + offset[1]\n"
    "      if k == 0:\n        u = uu\n        v = vv\n"
    "      if k == 1:\n        dux = uu - u\n        dvx = vv - v\n"
    "      if k == 2:\n        duy = uu - u\n        dvy = vv - v\n"
)
_TRILINEAR = (
    "    u = u - wp.floor(u)\n"
    "    v = v - wp.floor(v)\n"
    "    tex_color = wp.texture_sample(tex, wp.vec2(u, v), dtype=wp.vec4)\n"
    "    if wp.static(mip_on):\n"
    "      tsize = tex_size[tex_id]\n"
    "      rho = wp.max(\n"
    "        wp.length(wp.vec2(dux * tsize[0], dvx * tsize[1])),\n"
    "        wp.length(wp.vec2(duy * tsize[0], dvy * tsize[1])),\n"
    "      )\n"
    "      if gtype == GeomType.MESH or gtype == GeomType.SDF:\n"
    "        if f >= 0 and mesh_id >= 0:\n"
    "          face_scale = mip_face[mesh_faceadr[mesh_id] + f]\n"
    "          if face_scale > 0.0:\n"
    "            reach = wp.max(wp.length(dpx), wp.length(dpy))\n"
    "            rho = face_scale * reach * wp.sqrt(tsize[0] * tsize[1])\n"
    "      nlevel = mip_count[tex_id]\n"
    "      if rho > 1.0 and nlevel > 1:\n"
    "        lod = wp.min(wp.log2(rho), float(nlevel - 1))\n"
    "        l0 = int(wp.floor(lod))\n"
    "        frac = lod - float(l0)\n"
    "        l1 = wp.min(l0 + 1, nlevel - 1)\n"
    "        c0 = tex_color\n"
    "        at = wp.vec2(u, v)\n"
    "        if l0 > 0:\n"
    "          c0 = wp.texture_sample(textures[mip_base[tex_id] + l0 - 1], at, dtype=wp.vec4)\n"
    "        c1 = wp.texture_sample(textures[mip_base[tex_id] + l1 - 1], at, dtype=wp.vec4)\n"
    "        tex_color = c0 * (1.0 - frac) + c1 * frac\n"
)

# The tangent-plane points of the next pixel's rays (right, down) of the final image.
_FOOTPRINT = (
    "    mip_dpx = wp.vec3(0.0)\n"
    "    mip_dpy = wp.vec3(0.0)\n"
    "    if wp.static(mip_on):\n"
    "      if cam_projection[mujoco_cam_id] == 0:\n"
    "        fovy = cam_fovy[worldid % cam_fovy.shape[0], mujoco_cam_id]\n"
    "        step = 2.0 * wp.tan(fovy * wp.static(wp.pi / 360.0)) / float(cam_res[camid][1])\n"
    "        step = step * float(wp.static(mip_pixel))\n"
    "        lray = ray_dir_local_cam / wp.max(-ray_dir_local_cam[2], 1.0e-6)\n"
    "        rx = cam_mat_world @ (lray + wp.vec3(step, 0.0, 0.0))\n"
    "        ry = cam_mat_world @ (lray - wp.vec3(0.0, step, 0.0))\n"
    "        depth_n = wp.dot(hit_point - ray_origin_world, normal)\n"
    "        if wp.abs(wp.dot(rx, normal)) > 1.0e-6:\n"
    "          mip_dpx = ray_origin_world + rx * (depth_n / wp.dot(rx, normal)) - hit_point\n"
    "        if wp.abs(wp.dot(ry, normal)) > 1.0e-6:\n"
    "          mip_dpy = ray_origin_world + ry * (depth_n / wp.dot(ry, normal)) - hit_point\n"
)

_MIP_PARAMS = (
    "    textures: wp.array[wp.Texture2D],\n    tex_id: int,\n    mip_base: wp.array[int],\n"
    "    mip_count: wp.array[int],\n    tex_size: wp.array[wp.vec2],\n"
    "    mip_face: wp.array[float],\n    dpx: wp.vec3,\n    dpy: wp.vec3,\n"
)


def _sample_texture_edit(source: str) -> str | None:
    """sample_texture's mapping wrapped in the three-point loop, and trilinear sampling."""
    start, end = source.find(_MAP_START), source.find(_MAP_END)
    if start < 0 or end < start or source.count(_MAP_START) != 1 or source.count(_SAMPLE) != 1:
        return None
    body = source[start + len(_MAP_START) : end]
    body = "".join("  " + line if line.strip() else line for line in body.splitlines(True))
    source = source[:start] + _LOOP_HEAD + body + _LOOP_TAIL + source[end + len(_MAP_END) :]
    return source.replace(_SAMPLE, _TRILINEAR)


MIP_EDITS = (
    (
        "def _make_sample_texture(geom_ray_types: Tuple[int]) -> wp.Function:\n",
        "def _make_sample_texture(geom_ray_types: Tuple[int], mip_on=False) -> wp.Function:\n",
    ),
    (
        "    tex_uniform: bool,\n    tex: wp.Texture2D,\n",
        "    tex_uniform: bool,\n    tex: wp.Texture2D,\n" + _MIP_PARAMS,
    ),
    (
        "  sample_texture = _make_sample_texture(geom_ray_types)\n",
        "  mip_on = mips is not None and not reflect\n"
        "  mip_pixel = mips if mips is not None else 1\n"
        "  sample_texture = _make_sample_texture(geom_ray_types, mip_on)\n",
    ),
    (
        "    textures: wp.array[wp.Texture2D],\n    splat_position",
        "    textures: wp.array[wp.Texture2D],\n    mip_base: wp.array[int],\n"
        "    mip_count: wp.array[int],\n    tex_size: wp.array[wp.vec2],\n"
        "    mip_face: wp.array[float],\n    splat_position",
    ),
    (
        "            textures[tex_id],\n",
        "            textures[tex_id],\n            textures,\n            tex_id,\n"
        "            mip_base,\n            mip_count,\n            tex_size,\n"
        "            mip_face,\n"
        "            mip_dpx,\n            mip_dpy,\n",
    ),
    (
        "    hit_point = ray_origin_world + ray_dir_world * dist\n",
        "    hit_point = ray_origin_world + ray_dir_world * dist\n" + _FOOTPRINT,
    ),
    (
        "        rc.textures,\n        rc.splat_position",
        "        rc.textures,\n        mips[0],\n        mips[1],\n        mips[2],\n"
        "        mips[3],\n"
        "        rc.splat_position",
    ),
    (
        "  _render_megakernel = rc._megakernel if mirror_kernel is None else mirror_kernel\n",
        "  _render_megakernel = rc._megakernel if mirror_kernel is None else mirror_kernel\n"
        '  mips = getattr(rc, "metasim_mips", None)\n'
        "  if mips is None:\n"
        "    none = wp.zeros(1, dtype=float)\n"
        "    mips = (rc.skybox_tex_id, rc.skybox_tex_id, rc.mesh_texcoord, none)\n",
    ),
)


def mip_source(source: str) -> str | None:
    """The render module's source with the mipmap edits (after the mirror edits, whose
    `_build_megakernel(..., mirror=None)` signature this extends), or None."""
    source_or_none = _sample_texture_edit(source)
    if source_or_none is None:
        return None
    source = source_or_none
    for old, new in MIP_EDITS:
        if source.count(old) != 1:
            return None
        source = source.replace(old, new)
    sig = "def _build_megakernel(m: Model, rc: RenderContext, mirror=None):\n"
    if source.count(sig) != 1:
        return None
    return source.replace(sig, sig.replace("mirror=None", "mirror=None, mips=None"))


def levels(pixels: np.ndarray) -> list[np.ndarray]:
    """(H, W, 4) float texture -> its mip levels 1.. (each half the size, 2x2 means, down to
    1 texel on the shorter side)."""
    out = []
    level = pixels
    while min(level.shape[0], level.shape[1]) > 1:
        h, w = level.shape[0] // 2, level.shape[1] // 2
        level = level[: 2 * h, : 2 * w].reshape(h, 2, w, 2, 4).mean(axis=(1, 3))
        out.append(np.ascontiguousarray(level, dtype=np.float32))
    return out


def face_scales(model: mujoco.MjModel) -> np.ndarray:
    """(nmeshface,) texture-coordinate units per metre of each mesh face (sqrt of its
    area in texture coordinates over its area in space; 0 where it has none): a mesh hit's
    footprint in texels is this x the footprint in metres x the texture's size."""
    out = np.zeros(max(model.nmeshface, 1), dtype=np.float32)
    for mesh in range(model.nmesh):
        tc = model.mesh_texcoordadr[mesh]
        if tc < 0:
            continue
        fa, nf, va = model.mesh_faceadr[mesh], model.mesh_facenum[mesh], model.mesh_vertadr[mesh]
        tri = model.mesh_vert[va + model.mesh_face[fa : fa + nf]]  # (nf, 3, 3)
        uv = model.mesh_texcoord[tc + model.mesh_facetexcoord[fa : fa + nf]]  # (nf, 3, 2)
        area = np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
        e1, e2 = uv[:, 1] - uv[:, 0], uv[:, 2] - uv[:, 0]
        uv_area = np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])
        ok = (area > 0) & (model.mesh_facetexcoord[fa : fa + nf] >= 0).all(axis=1)
        out[fa : fa + nf][ok] = np.sqrt(uv_area[ok] / area[ok])
    return out


def attach_mipmaps(model: mujoco.MjModel, rc: Any) -> int:
    """Give render context `rc` the mip levels of its 2D textures (as drawn: after any
    one-face cube fix) and the arrays the edited kernel reads (`rc.metasim_mips`: first
    level index, level count and size of each texture). Returns the number of levels."""
    registry = list(rc.textures_registry)
    count = np.ones(model.ntex, dtype=np.int32)
    base = np.zeros(model.ntex, dtype=np.int32)
    size = np.ones((model.ntex, 2), dtype=np.float32)
    for tex in range(model.ntex):
        drawn = rc.textures_registry[tex]
        if drawn is None or model.tex_type[tex] == mujoco.mjtTexture.mjTEXTURE_SKYBOX:
            continue
        pixels = texture_pixels(model, tex)[: drawn.height, : drawn.width]
        rgba = np.ones((*pixels.shape[:2], 4), dtype=np.float32)
        rgba[..., : min(pixels.shape[2], 4)] = pixels[..., :4] / 255.0
        extra = levels(rgba)
        base[tex], count[tex] = len(registry), 1 + len(extra)
        size[tex] = (drawn.width, drawn.height)
        for level in extra:
            data: Any = wp.array(level, dtype=float)
            registry.append(wp.Texture2D(data, filter_mode=wp.TextureFilterMode.LINEAR))
    rc.textures_registry = registry  # the array holds handles: keep the textures alive
    rc.textures = wp.array(registry, dtype=wp.Texture2D)
    rc.metasim_mips = (
        wp.array(base, dtype=int),
        wp.array(count, dtype=int),
        wp.array(size, dtype=wp.vec2),
        wp.array(face_scales(model), dtype=float),
    )
    return len(registry) - model.ntex


__all__ = ["MIP_EDITS", "attach_mipmaps", "face_scales", "levels", "mip_source"]
