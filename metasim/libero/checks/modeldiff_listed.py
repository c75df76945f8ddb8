"""The listed differences of `metasim libero modeldiff`: what metasim's compiled LIBERO
task may hold differently from the reference's model, and why (the kit's model-diff engine,
`metasim.reference.modeldiff`, reads them). docs/libero.md mirrors `LISTED` in its
model-diff table (tests/libero/test_modeldiff.py checks both agree)."""

from __future__ import annotations

from metasim.reference import modeldiff
from metasim.reference.modeldiff import Difference, Listed

_HIDDEN = "hidden"
_COM = "com"
# The listed differences, mirrored by the table in docs/libero.md (checked by
# tests/libero/test_modeldiff.py). Anything else is UNLISTED.
LISTED: tuple[Listed, ...] = (
    Listed("geom_group", "*", "render: hide_collision_geoms moves collision geoms (group 0) "
           "to group 3, which MuJoCo's default render does not draw; robosuite's renderer "
           "hides group 0 itself", metasim=[3.0], reference=[0.0]),
    Listed("site_group", "*", "render: hide_sites moves every site to group 3; robosuite "
           "hides sites by their alpha (site_rgba)", metasim=[3.0]),
    Listed("site_rgba", "*", "robosuite hides sites by negating their alpha; metasim keeps "
           "the file's colour and hides sites by group", same_magnitude=True),
    Listed("geom_rgba", "*", _HIDDEN, collision=True),
    Listed("site:element", "*_default_site", "robosuite adds a `default_site` to every "
           "object and fixture; a site has no physics, LIBERO's renderer hides it and no "
           "metasim predicate reads it", reference="present"),
    Listed("cam:element", "*view", "the arena file's own cameras (birdview, frontview, "
           "galleryview, sideview, ...): LIBERO's observations use agentview and "
           "robot0_eye_in_hand only; metasim drops the arena's cameras", reference="present"),
    Listed("cam_poscom0", "*", _COM),
    Listed("light_poscom0", "*", _COM),
    Listed("vis.headlight.active", "model", "each version's compiled default for an MJCF "
           "without <headlight active>: MuJoCo 4 writes 2, 3.17 writes 1; the headlight is "
           "on in both", metasim=[2.0], reference=[1.0]),
    Listed("vis.quality.shadowsize", "model", "compile_scene renders 1024-texel shadow maps "
           "(4096 costs several times the frame time on software GL)", metasim=[1024.0]),
)  # fmt: skip
_REASONS = {
    _COM: "a constant derived at compile time from the world's centre of mass at qpos0 "
    "(every object and fixture, where each simulator compiled it); read only by the "
    "trackcom/targetbodycom modes, and LIBERO's cameras and lights are fixed",
    _HIDDEN: "the colour of a collision geom: robosuite recolours those of robots, "
    "grippers, mounts and tables (contact_geom_rgba); collision geoms are drawn by neither "
    "renderer (group 0 hidden) and a colour has no physics",
}


def reason_for(d: Difference) -> str:
    """The `LISTED` reason of a difference, "" when it is not listed."""
    return modeldiff.reason_for(d, LISTED, _REASONS)
