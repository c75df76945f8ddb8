"""What MJX can simulate: checks that name the scene element MJX cannot handle.

`mjx.put_model` rejects unsupported models with terse `NotImplementedError`s (e.g.
"(mjGEOM_BOX, mjGEOM_CYLINDER) collisions not implemented."). `check_supported` looks
for the common cases first and raises a `ValueError` naming the feature and the geoms,
bodies or elements involved; anything else `put_model` raises is re-raised as a
`ValueError` naming the scene.
"""

from __future__ import annotations

import mujoco
from mujoco import mjx
from mujoco.mjx._src import collision_driver

from metasim.scene.compile import CompiledScene
from metasim.sim.base import UnsupportedScene

_OPTION_CHECKS = (
    ("integrator", mujoco.mjtIntegrator, {"mjINT_EULER", "mjINT_RK4", "mjINT_IMPLICITFAST"}),
    ("cone", mujoco.mjtCone, {"mjCONE_PYRAMIDAL", "mjCONE_ELLIPTIC"}),
    ("solver", mujoco.mjtSolver, {"mjSOL_CG", "mjSOL_NEWTON"}),
)


def _geom_label(m: mujoco.MjModel, g: int) -> str:
    geom = m.geom(g)
    body = m.body(int(m.geom_bodyid[g])).name or "world"
    kind = mujoco.mjtGeom(int(m.geom_type[g])).name.removeprefix("mjGEOM_").lower()
    return f"geom {geom.name or f'#{g}'} ({kind}, body {body})"


def unsupported(m: mujoco.MjModel) -> list[str]:
    """Reasons MJX (impl="jax") cannot simulate `m`; empty when it can."""
    problems: list[str] = []
    for name, enum, ok in _OPTION_CHECKS:
        value = enum(int(getattr(m.opt, name)))
        if value.name not in ok:
            problems.append(f"option {name}={value.name} is not supported by MJX")
    if m.nflex:
        problems.append(f"flex elements ({m.nflex}) are not supported by MJX")
    for g1, g2, _ in collision_driver.geom_pairs(m):
        t1, t2 = m.geom_type[g1], m.geom_type[g2]
        if not collision_driver.has_collision_fn(t1, t2):
            problems.append(
                f"MJX has no collision function for {_geom_label(m, g1)} "
                f"against {_geom_label(m, g2)}"
            )
    return problems


def put_model(compiled: CompiledScene, impl: str = "jax") -> mjx.Model:
    """`mjx.put_model` with errors that name the scene and the unsupported element."""
    name = compiled.scene.name
    problems = unsupported(compiled.model) if impl == "jax" else []
    if problems:
        raise UnsupportedScene(f"scene {name!r} cannot run on MJX: " + "; ".join(problems))
    try:
        return mjx.put_model(compiled.model, impl=impl)
    except NotImplementedError as exc:
        raise UnsupportedScene(
            f"scene {name!r} uses a feature MJX does not support: {exc}"
        ) from None
