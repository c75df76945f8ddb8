"""Success predicates as pure functions of batched state.

`compile_predicate(tree, compiled)` turns a predicate tree from the scene YAML into a
function `f(view) -> (B,) bool`. Each predicate kind's evaluator is a small builder
registered with `@predicate(<its model>)` in `PREDICATE_FNS` (the core's here, a
benchmark package's in its own module); names are resolved to ids once, at compile time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from metasim.control.actions import as_slice
from metasim.registry import Registry
from metasim.rotations import quat_to_mat
from metasim.scene.compile import CompiledScene
from metasim.scene.kinds import predicate_name
from metasim.scene.schema import (
    AllOf,
    AnyOf,
    Grasped,
    InRegion,
    JointClosed,
    JointOpen,
    Lifted,
    Not,
    On,
    Predicate,
)
from metasim.sim.base import Kinematics


@dataclass
class TaskView:
    """What predicates read. kin: the current kinematics; init_body_pos (B, nbody, 3):
    body positions at the episode's reset; contacts: per env, the (n, 2) geom ids of the
    active contacts (`geom_contacts`), for predicates that test touching (None: not read)."""

    kin: Kinematics
    init_body_pos: np.ndarray
    contacts: list[np.ndarray] | None = None


PredFn = Callable[[TaskView], np.ndarray]
PredBuilder = Callable[[Any, CompiledScene], PredFn]  # (node, compiled) -> f(view)
PREDICATE_FNS: Registry[PredBuilder] = Registry("predicate evaluator")


def predicate(kind: type) -> Callable[[PredBuilder], PredBuilder]:
    """Register the decorated builder as the evaluator of predicate kind `kind` (a model
    registered in `PREDICATE_KINDS`), under its key."""
    return PREDICATE_FNS.register(predicate_name(kind))


def compile_predicate(node: Predicate, compiled: CompiledScene) -> PredFn:
    """The function `f(view) -> (B,) bool` of the predicate tree under `node`."""
    kind = predicate_name(type(node))
    fn = PREDICATE_FNS.get(kind)
    if fn is None:
        raise LookupError(f"predicate kind {kind!r} has no evaluator: register one with @predicate")
    return fn(node, compiled)


def body_extent(compiled: CompiledScene, body: int) -> tuple[np.ndarray, np.ndarray]:
    """(center, half) of the union of a body's collision boxes, in the body frame."""
    m = compiled.model
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for g in np.flatnonzero(m.geom_bodyid == body):
        if m.geom_contype[g] == 0 and m.geom_conaffinity[g] == 0:
            continue
        rot = quat_to_mat(m.geom_quat[g])
        center = m.geom_pos[g] + rot @ m.geom_aabb[g, :3]
        half = np.abs(rot) @ m.geom_aabb[g, 3:]
        lo, hi = np.minimum(lo, center - half), np.maximum(hi, center + half)
    if not np.all(np.isfinite(lo)):
        return np.zeros(3), np.zeros(3)
    return (lo + hi) / 2, (hi - lo) / 2


@predicate(AllOf)
def _all(node: AllOf, c: CompiledScene) -> PredFn:
    parts = [compile_predicate(p, c) for p in node.all]
    return lambda v: np.logical_and.reduce([p(v) for p in parts])


@predicate(AnyOf)
def _any(node: AnyOf, c: CompiledScene) -> PredFn:
    parts = [compile_predicate(p, c) for p in node.any]
    return lambda v: np.logical_or.reduce([p(v) for p in parts])


@predicate(Not)
def _not(node: Not, c: CompiledScene) -> PredFn:
    inner = compile_predicate(node.not_, c)
    return lambda v: ~inner(v)


@predicate(Lifted)
def _lifted(node: Lifted, c: CompiledScene) -> PredFn:
    b = c.index.bodies[node.lifted.object]
    h = node.lifted.height
    return lambda v: v.kin.body_pos[:, b, 2] - v.init_body_pos[:, b, 2] > h


@predicate(InRegion)
def _in_region(node: InRegion, c: CompiledScene) -> PredFn:
    b = c.index.bodies[node.in_region.object]
    reg = node.in_region.region
    center, half = np.asarray(reg.center), np.asarray(reg.half_size)
    frame = c.index.bodies[reg.frame] if reg.frame else None

    def fn(v: TaskView) -> np.ndarray:
        p = v.kin.body_pos[:, b]
        if frame is not None:
            rot = quat_to_mat(v.kin.body_quat[:, frame])
            p = np.einsum("bji,bj->bi", rot, p - v.kin.body_pos[:, frame])
        return np.all(np.abs(p - center) <= half, axis=-1)

    return fn


@predicate(On)
def _on(node: On, c: CompiledScene) -> PredFn:
    a = c.index.bodies[node.on.object]
    s = c.index.bodies[node.on.support]
    ca, ha = body_extent(c, a)
    cs, hs = body_extent(c, s)
    margin, tol = node.on.xy_margin, node.on.z_tolerance

    def fn(v: TaskView) -> np.ndarray:
        pa = v.kin.body_pos[:, a] + ca
        ps = v.kin.body_pos[:, s] + cs
        gap = (pa[:, 2] - ha[2]) - (ps[:, 2] + hs[2])
        inside = np.all(np.abs(pa[:, :2] - ps[:, :2]) <= hs[:2] + margin, axis=-1)
        return inside & (np.abs(gap) <= tol)

    return fn


def _joint_fraction(c: CompiledScene, joint: str) -> Callable[[TaskView], np.ndarray]:
    j = c.joint_ref(joint)
    adr = c.index.joint_qpos[j]
    lo, hi = c.index.joint_range[j]
    return lambda v: (v.kin.qpos[:, adr] - lo) / (hi - lo)


@predicate(JointOpen)
def _joint_open(node: JointOpen, c: CompiledScene) -> PredFn:
    frac = _joint_fraction(c, node.joint_open.joint)
    return lambda v: frac(v) >= node.joint_open.fraction


@predicate(JointClosed)
def _joint_closed(node: JointClosed, c: CompiledScene) -> PredFn:
    frac = _joint_fraction(c, node.joint_closed.joint)
    return lambda v: frac(v) <= node.joint_closed.fraction


@predicate(Grasped)
def _grasped(node: Grasped, c: CompiledScene) -> PredFn:
    """The object sits between the pads (the EE site's y axis is the closing axis) and the
    fingers are stopped short of closing by it."""
    b = c.index.bodies[node.grasped.object]
    site = c.index.ee_site
    fingers = c.index.gripper_qpos
    grip = c.robot.gripper
    if grip is None or len(fingers) == 0:
        return lambda v: np.zeros(v.kin.qpos.shape[0], dtype=bool)
    _, half = body_extent(c, b)
    reach = float(np.max(half)) + 0.02
    limit = np.array([reach, 0.02, reach])  # |offset| in the site frame, per axis
    finger_cols = as_slice(fingers)
    widest = grip.max_width - 0.004

    def fn(v: TaskView) -> np.ndarray:
        kin = v.kin
        rel = kin.body_pos[:, b] - kin.site_pos[:, site]
        local = (rel[:, None, :] @ kin.site_mat[:, site])[:, 0]  # site frame (B, 3)
        between = np.logical_and.reduce(np.abs(local) < limit, axis=1)
        opening = np.add.reduce(np.abs(kin.qpos[:, finger_cols]), axis=1)
        return between & (opening > 0.004) & (opening < widest)

    return fn
