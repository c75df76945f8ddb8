"""OpenGL's sites in the warp rig (`render.raytrace.sites`).

MuJoCo's OpenGL renderer draws a site as it draws a geom: a sphere, capsule, ellipsoid,
cylinder or box of the site's size at the site's pose, coloured and lit like a geom
(its material's colour, emission, specular and shininess unless the site sets its own
rgba), for every site whose group the renderer shows (MuJoCo's default: groups 0-2, as
metasim's OpenGL rig and Meta-World's renderer use) and whose colour is not fully
transparent. MuJoCo Warp's ray tracer draws geoms only, so the rig traces a model with
one visual-only geom per such site (`with_sites`): the physics model recompiled from
the scene's spec with one more body, welded to the world and last in body order, that
holds the site geoms (contype and conaffinity 0, group, type, size, material and rgba of
the site), so every body and geom keeps its index; every field of the physics model is
copied over the new model's (its edits after compiling, e.g. the scene's hidden groups).
Each render copies the sites' world poses onto those geoms (`place_site_geoms`) after the
kinematics. The physics model and data are never touched: the rig's kinematics run on a
data of the render model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from metasim.sim.warp.gl_reflection import DEFAULT_GEOM_RGBA

SHOWN_GROUPS = (0, 1, 2)  # mjv_defaultOption's sitegroup


@dataclass(frozen=True)
class SiteGeoms:
    """`model`: the render model (the physics model plus one geom per drawn site, the
    geoms `first`, `first` + 1, ... in the order of `sites`, the site ids)."""

    model: mujoco.MjModel
    sites: np.ndarray
    first: int


def site_rgba(model: mujoco.MjModel, s: int) -> np.ndarray:
    """The colour OpenGL draws site `s` with: its material's unless it sets its own."""
    mat = model.site_matid[s]
    if mat >= 0 and np.allclose(model.site_rgba[s], DEFAULT_GEOM_RGBA):
        return np.asarray(model.mat_rgba[mat])
    return np.asarray(model.site_rgba[s])


def drawn_sites(model: mujoco.MjModel) -> np.ndarray:
    """The sites OpenGL draws: in a shown group, colour alpha > 0."""
    return np.array(
        [
            s
            for s in range(model.nsite)
            if min(max(int(model.site_group[s]), 0), 5) in SHOWN_GROUPS
            and site_rgba(model, s)[3] > 0
        ],
        dtype=np.int32,
    )


def _copy_fields(src: mujoco.MjModel, dst: mujoco.MjModel) -> None:
    """Every array of `src` onto `dst`: whole where the shapes agree, the leading rows of
    its body and geom arrays (`dst` has more bodies and geoms, added last); not the names
    and bounding-volume trees (their addresses follow `dst`'s own buffers)."""
    for name in dir(src):
        if name.startswith(("_", "name", "path")) or "bvh" in name:
            continue
        a = getattr(src, name)
        if not isinstance(a, np.ndarray):
            continue
        b = getattr(dst, name)
        if a.shape == b.shape:
            b[...] = a
        elif name.startswith(("body_", "geom_")) and a.shape[1:] == b.shape[1:]:
            b[: a.shape[0]] = a


def with_sites(model: mujoco.MjModel, spec: mujoco.MjSpec | None) -> SiteGeoms | None:
    """The render model of `model` (compiled from `spec`) with its drawn sites as geoms,
    or None where no site is drawn or there is no spec (a prebuilt scene: sites not drawn)."""
    sites = drawn_sites(model)
    if not len(sites) or spec is None:
        return None
    copy = spec.copy()
    holder = copy.worldbody.add_body()
    for s in sites:
        holder.add_geom(
            type=mujoco.mjtGeom(int(model.site_type[s])),
            size=np.asarray(model.site_size[s], dtype=float),
            rgba=site_rgba(model, s).astype(float),
            contype=0,
            conaffinity=0,
            group=int(model.site_group[s]),
            mass=0.0,
        )
    out = copy.compile()
    first = model.ngeom
    if out.ngeom != model.ngeom + len(sites) or out.nbody != model.nbody + 1:
        raise RuntimeError("the site geoms did not compile after the model's own geoms")
    _copy_fields(model, out)
    geoms = slice(first, first + len(sites))
    out.geom_matid[geoms] = model.site_matid[sites]  # as OpenGL lights the site
    out.geom_rgba[geoms] = model.site_rgba[sites]
    out.geom_group[geoms] = model.site_group[sites]
    return SiteGeoms(out, sites, first)


def place_site_geoms(sg: SiteGeoms, wm: Any, wd: Any) -> None:
    """Put the site geoms at their sites' world poses in every world of `wd` (after the
    kinematics of the render model `wm`)."""
    import warp as wp

    from metasim.sim.warp.kernels import site_geom_poses

    sites: Any = wp.array(sg.sites, dtype=int)
    wp.launch(
        site_geom_poses,
        dim=(wd.nworld, len(sg.sites)),
        inputs=[sg.first, sites, wd.site_xpos, wd.site_xmat],
        outputs=[wd.geom_xpos, wd.geom_xmat],
    )


__all__ = ["SHOWN_GROUPS", "SiteGeoms", "drawn_sites", "place_site_geoms", "with_sites"]
