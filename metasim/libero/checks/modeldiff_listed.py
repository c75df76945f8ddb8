"""The listed differences of `metasim check modeldiff --benchmark libero`: what metasim's
compiled LIBERO task may hold differently from the reference's model, and why (the
kit's model-diff engine, `metasim.reference.modeldiff`, reads them). docs/libero.md
mirrors `LISTED` in its model-diff table (tests/libero/test_modeldiff.py checks both
agree). The renderer's and MuJoCo 3.17's entries are robosuite's
(`metasim.robosuite.checks.modeldiff_listed`)."""

from __future__ import annotations

from metasim.reference import modeldiff
from metasim.reference.modeldiff import Difference, Listed
from metasim.robosuite.checks.modeldiff_listed import NOTES, RENDER, VERSIONS

_COM = "com"
# The listed differences, mirrored by the table in docs/libero.md (checked by
# tests/libero/test_modeldiff.py). Anything else is UNLISTED.
LISTED: tuple[Listed, ...] = (
    *RENDER,
    Listed("site:element", "*_default_site", "robosuite adds a `default_site` to every "
           "object and fixture; a site has no physics, LIBERO's renderer hides it and no "
           "metasim predicate reads it", reference="present"),
    Listed("cam:element", "*view", "the arena file's own cameras (birdview, frontview, "
           "galleryview, sideview, ...): LIBERO's observations use agentview and "
           "robot0_eye_in_hand only; metasim drops the arena's cameras", reference="present"),
    Listed("cam_poscom0", "*", _COM),
    Listed("light_poscom0", "*", _COM),
    *VERSIONS,
)  # fmt: skip
_REASONS = {
    **NOTES,
    _COM: "a constant derived at compile time from the world's centre of mass at qpos0 "
    "(every object and fixture, where each simulator compiled it); read only by the "
    "trackcom/targetbodycom modes, and LIBERO's cameras and lights are fixed",
}


def reason_for(d: Difference) -> str:
    """The `LISTED` reason of a difference, "" when it is not listed."""
    return modeldiff.reason_for(d, LISTED, _REASONS)
