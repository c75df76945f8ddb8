"""The listed differences of `metasim libero modeldiff`: what metasim's compiled LIBERO
task may hold differently from the reference's model, and why. docs/libero.md mirrors
`LISTED` in its model-diff table (tests/libero/test_modeldiff.py checks both agree)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

import numpy as np

RTOL = 1e-6
ATOL = 1e-9


@dataclass(frozen=True)
class Listed:
    """A listed difference: fnmatch patterns on the field and on the element's key
    (reference names); with `metasim`/`reference` the values must also be these (None:
    any); with `same_magnitude` the values must be equal up to sign; with `collision` the
    element must be one of the reference's collision geoms."""

    field: str
    element: str
    reason: str
    metasim: Any = None
    reference: Any = None
    same_magnitude: bool = False
    collision: bool = False

    def matches(self, d: Difference) -> bool:
        if not (fnmatch.fnmatchcase(d.field, self.field)):
            return False
        if not fnmatch.fnmatchcase(d.element, self.element):
            return False
        if self.collision and not d.collision:
            return False
        if self.metasim is not None and d.metasim != self.metasim:
            return False
        if self.reference is not None and d.reference != self.reference:
            return False
        if self.same_magnitude:
            return bool(np.allclose(np.abs(d.metasim), np.abs(d.reference), rtol=RTOL))
        return True


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


@dataclass(frozen=True)
class Difference:
    """One field of one element that differs (or an element or field on one side only).
    `metasim`/`reference` are the values as lists (None when absent); `reason` is the
    `LISTED` reason, or "" when the difference is not listed; `collision` marks a geom
    that is a collision geom (group 0) in the reference."""

    field: str
    element: str
    metasim: Any
    reference: Any
    reason: str = ""
    collision: bool = False

    @property
    def listed(self) -> bool:
        return bool(self.reason)

    def row(self) -> dict[str, Any]:
        return {"field": self.field, "element": self.element, "metasim": self.metasim,
                "reference": self.reference, "reason": self.reason or "UNLISTED"}  # fmt: skip


def reason_for(d: Difference) -> str:
    """The `LISTED` reason of a difference, "" when it is not listed."""
    for listed in LISTED:
        if listed.matches(d):
            return _REASONS.get(listed.reason, listed.reason)
    return ""
