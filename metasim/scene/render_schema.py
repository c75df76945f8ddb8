"""How a scene's cameras draw it (`render:` of a scene YAML): what image policies see."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from metasim.scene.schema_base import PositiveFloat, Strict, UnitQuat, Vec3


class RaytraceSpec(Strict):
    """Settings of MuJoCo Warp's ray tracer (`renderer: warp`), chosen to come closest to
    MuJoCo's OpenGL images (docs/rendering.md has the measured parity of each).
    `samples_per_pixel`: sub-pixel samples per axis (n² rays a pixel, anti-aliasing);
    `shadows`: shadow rays for lights that cast shadows (`shadow_fraction` of a light
    reaches an occluded point); `specular`: Phong highlights of materials; `skybox`: rays
    that hit nothing show the model's skybox texture (else black); `shading: opengl` clamps
    the lit colour before the texture multiplies it and adds the specular after, as
    MuJoCo's OpenGL does (`warp`: MuJoCo Warp's own order, see
    metasim.sim.warp.gl_shading); `reflections`: OpenGL's planar reflection in the scene's
    one reflective plane or box (metasim.sim.warp.gl_reflection); `mipmaps`: textures
    sampled through mipmaps by each pixel's footprint, as OpenGL (gl_mipmaps); both with
    `shading: opengl`; `sites`: the sites OpenGL draws (groups 0-2, not transparent) as
    geoms of the site's shape, size and colour (metasim.sim.warp.gl_sites; physics
    untouched); `translucent`: geoms of alpha < 0.995 blended over what is behind them,
    as OpenGL draws them (metasim.sim.warp.gl_translucent; with `shading: opengl`)."""

    samples_per_pixel: Annotated[int, Field(ge=1, le=4)] = 2
    shadows: bool = True
    shadow_fraction: Annotated[float, Field(ge=0, le=1)] = 0.0
    specular: bool = True
    skybox: bool = True
    shading: Literal["opengl", "warp"] = "opengl"
    reflections: bool = True
    mipmaps: bool = True
    sites: bool = True
    translucent: bool = True


class RenderSpec(Strict):
    """How cameras draw the scene (what image policies see); physics is untouched.
    `hide_collision_geoms` draws only visual geoms (MuJoCo group-0 geoms are moved to
    group 3, off by default), `hide_sites` hides every site; LIBERO's renderer does both.
    `renderer`: `opengl` (MuJoCo's renderer, one frame per env and camera) or `warp`
    (MuJoCo Warp's ray tracer: every camera of every env in one launch, settings in
    `raytrace`); an eval's `render=` overrides it."""

    headlight_ambient: Vec3 = (0.3, 0.3, 0.3)
    headlight_diffuse: Vec3 = (0.4, 0.4, 0.4)
    znear: PositiveFloat | None = None  # near clip plane as a fraction of the extent
    hide_collision_geoms: bool = False
    hide_sites: bool = False
    renderer: Literal["opengl", "warp"] = "opengl"
    raytrace: RaytraceSpec = RaytraceSpec()


class BackgroundSpec(Strict):
    """A scanned background (`background:` of a scene YAML): 3D Gaussian splats in the
    INRIA/gsplat/nerfstudio `.ply` layout (`splats`, relative to the scene file), placed
    in the scene frame by `pos`, `quat` (w, x, y, z) and a uniform `scale`: a splat at p
    in the file is at pos + R(quat) (scale p). The warp renderer draws the splats with
    the scene's meshes (a mesh in front hides them; degree-0 colour only). MuJoCo's OpenGL
    renderer draws no splats: it draws the mesh fallback, the object named `fallback`
    (e.g. `metasim recon`'s visual-only scan mesh `background`), which the warp renderer
    hides wherever it draws the splats. Physics is untouched."""

    splats: str
    pos: Vec3 = (0.0, 0.0, 0.0)
    quat: UnitQuat = (1.0, 0.0, 0.0, 0.0)
    scale: PositiveFloat = 1.0
    fallback: str | None = None


__all__ = ["BackgroundSpec", "RaytraceSpec", "RenderSpec"]
