"""What MJX can simulate: checks that name the scene element MJX cannot handle, and the
collision stand-ins that make scenes with cylinders on boxes MJX-ready.

MJX (mujoco-mjx 3.17, impl="jax") has collision functions for these geom-type pairs only
(`mujoco/mjx/_src/collision_driver.py`, `_COLLISION_FUNC`)::

    plane   : sphere capsule box ellipsoid cylinder mesh
    hfield  : sphere capsule box mesh
    sphere  : sphere capsule cylinder ellipsoid box mesh
    capsule : capsule box ellipsoid cylinder mesh
    ellipsoid: ellipsoid cylinder
    cylinder: cylinder
    box     : box mesh
    mesh    : mesh

so a cylinder cannot touch a box, a mesh or a height field, and an ellipsoid cannot
touch a box, a mesh or a height field. A convex mesh collides with everything except
ellipsoids and cylinders, through MJX's separating-axis routines (`convex_convex`,
`plane_convex`, `sphere_convex`, `capsule_convex`, `hfield_convex`).

Stand-ins: when a cylinder geom takes part in a pair MJX has no function for, the model
MJX simulates gets, for that geom only, a convex regular prism (`CYLINDER_SIDES` sides,
the cylinder's half-height, and a circumradius chosen so the prism has the cylinder's
cross-section area and volume: its flat sides lie 0.6% inside the cylinder and its edges
1.3% outside, for 16 sides). The body keeps the original mass, centre of mass and
inertia (set as an explicit inertial), the geom keeps its id, friction, solref, solimp,
condim, priority and margin. Other cylinders touching a substituted one are substituted
too (MJX has no cylinder-mesh pair). The native model (`CompiledScene.model`) is not
touched: rendering and the native backend use the round cylinder. `BackendHandler.
stand_ins` lists the substitutions and launching warns (`StandInWarning`).

`mjx.put_model` rejects unsupported models with terse `NotImplementedError`s (e.g.
"(mjGEOM_BOX, mjGEOM_CYLINDER) collisions not implemented."). `check_supported` looks
for the common cases first and raises a `ValueError` naming the feature and the geoms,
bodies or elements involved; anything else `put_model` raises is re-raised as a
`ValueError` naming the scene.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import mujoco
import numpy as np
from mujoco import mjx
from mujoco.mjx._src import collision_driver

from metasim.scene.compile import CompiledScene
from metasim.sim.state import UnsupportedScene

_OPTION_CHECKS = (
    ("integrator", mujoco.mjtIntegrator, {"mjINT_EULER", "mjINT_RK4", "mjINT_IMPLICITFAST"}),
    ("cone", mujoco.mjtCone, {"mjCONE_PYRAMIDAL", "mjCONE_ELLIPTIC"}),
    ("solver", mujoco.mjtSolver, {"mjSOL_CG", "mjSOL_NEWTON"}),
)

CYLINDER = int(mujoco.mjtGeom.mjGEOM_CYLINDER)
MESH = int(mujoco.mjtGeom.mjGEOM_MESH)

# Sides of a cylinder's prism stand-in. MJX merges each cap into one polygon face and
# down-samples faces with more than 20 vertices (mjx/_src/mesh.py), so at most 20.
CYLINDER_SIDES = 16
MAX_SIDES = 20


class StandInWarning(UserWarning):
    """MJX simulates a geom with a collision stand-in (see `StandIn`)."""


@dataclass(frozen=True)
class StandIn:
    """Geom `geom` (a cylinder in the scene) collides as a `sides`-sided prism on MJX,
    because MJX has no collision function for it against `against`."""

    geom: int
    label: str
    sides: int
    against: tuple[str, ...]

    def describe(self) -> str:
        shown = ", ".join(self.against[:4])
        if len(self.against) > 4:
            shown += f" and {len(self.against) - 4} more geoms"
        return (
            f"{self.label} collides as a {self.sides}-sided convex prism on MJX (no "
            f"cylinder collision against {shown}); same radius (equal area), "
            "half-height, mass and inertia"
        )


@dataclass(frozen=True)
class PhysicsModel:
    """The MjModel MJX simulates (the scene's own unless `stand_ins` is non-empty)."""

    model: mujoco.MjModel
    stand_ins: tuple[StandIn, ...] = ()


def geom_label(m: mujoco.MjModel, g: int, stand_ins: Iterable[StandIn] = ()) -> str:
    """How the checks name geom `g`: 'geom NAME (type, body BODY)'."""
    geom = m.geom(g)
    body = m.body(int(m.geom_bodyid[g])).name or "world"
    kind = mujoco.mjtGeom(int(m.geom_type[g])).name.removeprefix("mjGEOM_").lower()
    for s in stand_ins:
        if s.geom == g:
            kind = f"cylinder as a {s.sides}-sided prism"
    return f"geom {geom.name or f'#{g}'} ({kind}, body {body})"


def _ordered(t1: int, t2: int) -> tuple[int, int]:
    return (t1, t2) if t1 <= t2 else (t2, t1)


def _collides(t1: int, t2: int) -> bool:
    a, b = _ordered(t1, t2)
    return bool(collision_driver.has_collision_fn(a, b))


def unsupported(m: mujoco.MjModel, stand_ins: Iterable[StandIn] = ()) -> list[str]:
    """Reasons MJX (impl="jax") cannot simulate `m`; empty when it can."""
    stand_ins = tuple(stand_ins)
    problems = unsupported_options(m)
    for g1, g2 in unsupported_pairs(m):
        problems.append(
            f"MJX has no collision function for {geom_label(m, g1, stand_ins)} "
            f"against {geom_label(m, g2, stand_ins)}"
        )
    for g1, g2, margin in mesh_margin_pairs(m):
        problems.append(
            f"MJX has no collision margin for meshes and height fields: "
            f"{geom_label(m, g1, stand_ins)} against {geom_label(m, g2, stand_ins)} "
            f"has margin {margin:g}"
        )
    return problems


def mesh_margin_pairs(m: mujoco.MjModel) -> list[tuple[int, int, float]]:
    """(geom, geom, margin) of the pairs with a mesh or a height field and a non-zero
    collision margin, which `mjx.put_model` refuses ("margin/gap not implemented")."""
    no_margin = {MESH, int(mujoco.mjtGeom.mjGEOM_HFIELD)}
    out = []
    for g1, g2, ip in collision_driver.geom_pairs(m):
        if no_margin.isdisjoint((int(m.geom_type[g1]), int(m.geom_type[g2]))):
            continue
        margin = m.pair_margin[ip] if ip != -1 else m.geom_margin[g1] + m.geom_margin[g2]
        if margin:
            out.append((int(g1), int(g2), float(margin)))
    return out


def unsupported_options(m: mujoco.MjModel) -> list[str]:
    """The reasons `unsupported` gives that are not geom pairs: solver options, flex."""
    problems: list[str] = []
    for name, enum, ok in _OPTION_CHECKS:
        value = enum(int(getattr(m.opt, name)))
        if value.name not in ok:
            problems.append(f"option {name}={value.name} is not supported by MJX")
    if m.nflex:
        problems.append(f"flex elements ({m.nflex}) are not supported by MJX")
    return problems


def unsupported_pairs(m: mujoco.MjModel) -> list[tuple[int, int]]:
    """The geom pairs (geom ids, in MJX's order) that `m` can produce and MJX has no
    collision function for; `unsupported` names them."""
    return [
        (int(g1), int(g2))
        for g1, g2, _ in collision_driver.geom_pairs(m)
        if not _collides(int(m.geom_type[g1]), int(m.geom_type[g2]))
    ]


def plan_stand_ins(m: mujoco.MjModel) -> dict[int, list[int]]:
    """Cylinder geoms that need a convex stand-in: {geom: [the geoms it could not collide
    with]}. Repeats until stable, since a substituted cylinder can no longer touch
    another cylinder (MJX has no cylinder-mesh pair either)."""
    original = [int(t) for t in m.geom_type]
    types = list(original)
    pairs = [(int(g1), int(g2)) for g1, g2, _ in collision_driver.geom_pairs(m)]
    changed = True
    while changed:
        changed = False
        for g1, g2 in pairs:
            if _collides(types[g1], types[g2]):
                continue
            for g in (g1, g2):
                if types[g] == CYLINDER:
                    types[g] = MESH
                    changed = True
    plan: dict[int, list[int]] = {}
    for g1, g2 in pairs:
        for g, other in ((g1, g2), (g2, g1)):
            if types[g] == original[g]:
                continue
            if not _collides(original[g], types[other]) or not _collides(
                original[g], original[other]
            ):
                plan.setdefault(g, []).append(other)
    return plan


def cylinder_prism(radius: float, half_height: float, sides: int = CYLINDER_SIDES) -> np.ndarray:
    """(2 * sides, 3) vertices of a regular prism along z with the cylinder's half-height
    and cross-section area (hence volume): circumradius r * sqrt(2 pi / (n sin(2 pi / n)))."""
    if not 3 <= sides <= MAX_SIDES:
        raise ValueError(f"a cylinder stand-in needs 3 to {MAX_SIDES} sides, got {sides}")
    scale = math.sqrt(2 * math.pi / (sides * math.sin(2 * math.pi / sides)))
    angle = 2 * math.pi * np.arange(sides) / sides
    ring = radius * scale * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    bottom = np.column_stack([ring, np.full(sides, -half_height)])
    top = np.column_stack([ring, np.full(sides, half_height)])
    return np.concatenate([bottom, top])


def physics_model(
    compiled: CompiledScene, sides: int = CYLINDER_SIDES, impl: str = "jax"
) -> PhysicsModel:
    """The MjModel MJX should simulate for `compiled`: the scene's own, or (impl="jax",
    `sides` > 0) a copy whose cylinders that MJX cannot collide get prism stand-ins."""
    m = compiled.model
    plan = plan_stand_ins(m) if impl == "jax" and sides else {}
    if not plan:
        return PhysicsModel(m)
    try:
        return _with_stand_ins(compiled, plan, sides)
    except ValueError as exc:  # MuJoCo could not compile the copy (e.g. a lost asset)
        raise UnsupportedScene(
            f"scene {compiled.scene.name!r}: could not build MJX collision stand-ins for "
            f"its cylinders: {exc}"
        ) from None


def _with_stand_ins(
    compiled: CompiledScene, plan: dict[int, list[int]], sides: int
) -> PhysicsModel:
    m = compiled.model
    if compiled.spec is None:
        raise UnsupportedScene(
            f"scene {compiled.scene.name!r} is prebuilt (a saved model, no MjSpec): MJX "
            "needs its cylinders rebuilt as stand-ins; export it where it compiles"
        )
    spec = compiled.spec.copy()
    first = spec.compile()
    by_id = {int(first.bind(g).id): g for g in spec.geoms}
    stand_ins = []
    for g, against in sorted(plan.items()):
        sg = by_id[g]
        body_id = int(m.geom_bodyid[g])
        body = sg.parent
        if body_id != 0:  # keep the body's inertia: the cylinder's, not the prism's
            body.explicitinertial = True
            body.mass = float(m.body_mass[body_id])
            body.inertia = m.body_inertia[body_id].tolist()
            body.ipos = m.body_ipos[body_id].tolist()
            body.iquat = m.body_iquat[body_id].tolist()
        mesh_name = f"mjx_stand_in/{sg.name or g}"
        radius, half_height = float(m.geom_size[g, 0]), float(m.geom_size[g, 1])
        vert = cylinder_prism(radius, half_height, sides)
        spec.add_mesh(name=mesh_name, uservert=vert.ravel().tolist())
        sg.type = mujoco.mjtGeom.mjGEOM_MESH
        sg.meshname = mesh_name
        names = tuple(sorted({geom_label(m, o) for o in against}))
        stand_ins.append(StandIn(g, geom_label(m, g), sides, names))
    out = spec.compile()
    _check_same_layout(m, out, [s.geom for s in stand_ins])
    return PhysicsModel(out, tuple(stand_ins))


def _check_same_layout(a: mujoco.MjModel, b: mujoco.MjModel, geoms: list[int]) -> None:
    """The stand-in model must index like the scene's (same bodies, joints, geoms, sites)
    and keep everything but the substituted geoms' shapes, else its state could not be
    rendered with, or compared to, the native model's (e.g. if `compiled.model` had been
    edited without its spec)."""
    for field in ("nq", "nv", "nu", "nbody", "ngeom", "nsite", "nmocap", "neq", "ntendon"):
        if getattr(a, field) != getattr(b, field):
            raise RuntimeError(f"MJX stand-in model: {field} differs from the scene's")
    others = np.setdiff1d(np.arange(a.ngeom), geoms)
    checks = {
        "geom_bodyid": (a.geom_bodyid, b.geom_bodyid),
        "geom_type": (a.geom_type[others], b.geom_type[others]),
        "geom_size": (a.geom_size[others], b.geom_size[others]),
    }
    for field in (
        "body_pos",
        "body_quat",
        "body_mass",
        "body_inertia",
        "body_ipos",
        "qpos0",
        "jnt_range",
        "dof_damping",
        "actuator_gainprm",
        "actuator_biasprm",
        "geom_friction",
        "geom_pos",
        "site_pos",
    ):
        checks[field] = (getattr(a, field), getattr(b, field))
    for field, (x, y) in checks.items():
        if x.shape != y.shape or not np.allclose(x, y, rtol=1e-9, atol=1e-12):
            raise RuntimeError(f"MJX stand-in model: {field} differs from the scene's")


def put_model(
    compiled: CompiledScene, impl: str = "jax", cylinder_sides: int = CYLINDER_SIDES
) -> tuple[mjx.Model, PhysicsModel]:
    """`mjx.put_model` of `physics_model(compiled)` with errors that name the scene and
    the unsupported element; warns (`StandInWarning`) for every stand-in it used.
    `cylinder_sides=0` turns stand-ins off."""
    name = compiled.scene.name
    phys = physics_model(compiled, cylinder_sides, impl)
    problems = unsupported(phys.model, phys.stand_ins) if impl == "jax" else []
    if problems:
        raise UnsupportedScene(f"scene {name!r} cannot run on MJX: " + "; ".join(problems))
    for s in phys.stand_ins:
        warnings.warn(f"scene {name!r}: {s.describe()}", StandInWarning, stacklevel=4)
    try:
        return mjx.put_model(phys.model, impl=impl), phys
    except NotImplementedError as exc:
        raise UnsupportedScene(
            f"scene {name!r} uses a feature MJX does not support: {exc}"
        ) from None
