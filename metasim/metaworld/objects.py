"""Each Meta-World v3 task's observed objects: what its `_get_pos_objects` and
`_get_quat_objects` return (read from the package's `envs/sawyer_*_v3.py`), as batched
functions of an `MwState`. One or two objects per task; observation[4:18] packs
(position 3, quaternion 4) per object, zero-padded to 14.

Quaternions come in the form each task reads them: a body's `xquat` (w, x, y, z), or
SciPy's `Rotation.from_matrix(xmat).as_quat()` of a geom, site or body rotation (x, y, z,
w, the sign SciPy's method gives: see `xyzw_from_mat`), or a constant.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from metasim.metaworld.state import MwState, PosFn
from metasim.rotations import mat_to_quat

QuatFn = Callable[[MwState], np.ndarray]  # state -> (B, 4)


def xyzw_from_mat(mat: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotations -> (..., 4) quaternions (x, y, z, w) signed as SciPy's
    `Rotation.from_matrix(...).as_quat()` signs them: its method pivots on the largest of
    (m00, m11, m22, trace) (x, y, z or w) and leaves that component positive."""
    m = np.asarray(mat, dtype=np.float64)
    q = mat_to_quat(m)[..., [1, 2, 3, 0]]  # unit, w >= 0; to (x, y, z, w)
    decision = np.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], np.trace(m, 0, -2, -1)], -1)
    pivot = np.take_along_axis(q, decision.argmax(-1)[..., None], -1)
    return np.where(pivot < 0, -q, q)


def body(name: str, offset: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> PosFn:
    """Body `name`'s position (`get_body_com`), plus a fixed world offset."""
    off = np.array(offset)
    return lambda s: s.body_pos(name) + off


def site(name: str, offset: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> PosFn:
    """Site `name`'s position, plus a fixed world offset."""
    off = np.array(offset)
    return lambda s: s.site_pos(name) + off


def geom(name: str) -> PosFn:
    """Geom `name`'s world position (`data.geom(name).xpos`)."""
    return lambda s: s.geom_pos(name)


def dial_point(s: MwState) -> np.ndarray:
    """dial-turn: the dial's rim, 0.05 m from its centre at the knob joint's angle q:
    centre + 0.05 (sin q, -cos q, 0)."""
    q = s.joint_qpos("knob_Joint_1")
    rim = np.stack([np.sin(q), -np.cos(q), np.zeros_like(q)], axis=1) * 0.05
    return s.body_pos("dial") + rim


def xquat(name: str) -> QuatFn:
    """Body `name`'s `xquat` (w, x, y, z)."""
    return lambda s: s.body_quat(name)


def geom_xyzw(name: str) -> QuatFn:
    return lambda s: xyzw_from_mat(s.geom_mat(name))


def body_xyzw(name: str) -> QuatFn:
    return lambda s: xyzw_from_mat(s.body_mat(name))


def site_xyzw(name: str) -> QuatFn:
    return lambda s: xyzw_from_mat(s.site_mat(name))


def const(*q: float) -> QuatFn:
    value = np.array(q)
    return lambda s: np.broadcast_to(value, (s.num_envs, 4))


ZERO = const(0.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Observed:
    """One observed object: its position and its quaternion (as the task reads it)."""

    pos: PosFn
    quat: QuatFn


def _one(pos: PosFn, quat: QuatFn) -> tuple[Observed, ...]:
    return (Observed(pos, quat),)


_BUTTON_FRONT, _BUTTON_TOP = (0.0, -0.193, 0.0), (0.0, 0.0, 0.193)
_FAUCET = (0.0, 0.0, -0.01)

OBJECTS: dict[str, tuple[Observed, ...]] = {
    "assembly-v3": _one(site("RoundNut-8"), xquat("RoundNut")),
    "basketball-v3": _one(body("bsktball"), xquat("bsktball")),
    "bin-picking-v3": _one(body("obj"), xquat("obj")),
    "box-close-v3": _one(body("top_link"), xquat("top_link")),
    "button-press-topdown-v3": _one(body("button", _BUTTON_TOP), xquat("button")),
    "button-press-topdown-wall-v3": _one(body("button", _BUTTON_TOP), xquat("button")),
    "button-press-v3": _one(body("button", _BUTTON_FRONT), xquat("button")),
    "button-press-wall-v3": _one(body("button", _BUTTON_FRONT), xquat("button")),
    "coffee-button-v3": _one(site("buttonStart"), const(1.0, 0.0, 0.0, 0.0)),
    "coffee-pull-v3": _one(body("obj"), geom_xyzw("mug")),
    "coffee-push-v3": _one(body("obj"), geom_xyzw("mug")),
    "dial-turn-v3": _one(dial_point, xquat("dial")),
    "disassemble-v3": _one(site("RoundNut-8"), xquat("RoundNut")),
    "door-close-v3": _one(geom("handle"), geom_xyzw("handle")),
    "door-lock-v3": _one(site("lockStartLock"), xquat("door_link")),
    "door-open-v3": _one(geom("handle"), geom_xyzw("handle")),
    "door-unlock-v3": _one(site("lockStartUnlock"), xquat("door_link")),
    "drawer-close-v3": _one(body("drawer_link", (0.0, -0.16, 0.05)), ZERO),
    "drawer-open-v3": _one(body("drawer_link", (0.0, -0.16, 0.0)), xquat("drawer_link")),
    "faucet-close-v3": _one(site("handleStartClose", _FAUCET), xquat("faucetBase")),
    "faucet-open-v3": _one(site("handleStartOpen", _FAUCET), xquat("faucetBase")),
    "hammer-v3": (
        Observed(body("hammer"), xquat("hammer")),
        Observed(body("nail_link"), xquat("nail_link")),
    ),
    "hand-insert-v3": _one(body("obj"), xquat("obj")),
    "handle-press-side-v3": _one(site("handleStart"), ZERO),
    "handle-press-v3": _one(site("handleStart"), ZERO),
    "handle-pull-side-v3": _one(site("handleCenter"), ZERO),
    "handle-pull-v3": _one(site("handleRight"), ZERO),
    "lever-pull-v3": _one(site("leverStart"), geom_xyzw("objGeom")),
    "peg-insert-side-v3": _one(site("pegGrasp"), site_xyzw("pegGrasp")),
    "peg-unplug-side-v3": _one(site("pegEnd"), xquat("plug1")),
    "pick-out-of-hole-v3": _one(body("obj"), xquat("obj")),
    "pick-place-v3": _one(body("obj"), geom_xyzw("objGeom")),
    "pick-place-wall-v3": _one(geom("objGeom"), geom_xyzw("objGeom")),
    "plate-slide-back-side-v3": _one(geom("puck"), geom_xyzw("puck")),
    "plate-slide-back-v3": _one(geom("puck"), geom_xyzw("puck")),
    "plate-slide-side-v3": _one(geom("puck"), geom_xyzw("puck")),
    "plate-slide-v3": _one(geom("puck"), geom_xyzw("puck")),
    "push-back-v3": _one(geom("objGeom"), geom_xyzw("objGeom")),
    "push-v3": _one(body("obj"), geom_xyzw("objGeom")),
    "push-wall-v3": _one(geom("objGeom"), geom_xyzw("objGeom")),
    "reach-v3": _one(body("obj"), geom_xyzw("objGeom")),
    "reach-wall-v3": _one(body("obj"), geom_xyzw("objGeom")),
    "shelf-place-v3": _one(body("obj"), geom_xyzw("objGeom")),
    "soccer-v3": _one(body("soccer_ball"), body_xyzw("soccer_ball")),
    "stick-pull-v3": (
        Observed(body("stick"), body_xyzw("stick")),
        Observed(site("insertion"), ZERO),
    ),
    "stick-push-v3": (
        Observed(body("stick"), body_xyzw("stick")),
        Observed(site("insertion", (0.0, 0.09, 0.0)), ZERO),
    ),
    "sweep-into-v3": _one(body("obj"), geom_xyzw("objGeom")),
    "sweep-v3": _one(body("obj"), xquat("obj")),
    "window-close-v3": _one(site("handleCloseStart"), ZERO),
    "window-open-v3": _one(site("handleOpenStart"), ZERO),
}
