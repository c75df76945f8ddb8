"""The scene's physics options (`physics:` of a scene YAML), MuJoCo's `<option>` in metasim's
names."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from metasim.scene.schema_base import NonNegFloat, PositiveFloat, Strict, Vec3


class PhysicsSpec(Strict):
    timestep: Annotated[float, Field(gt=0, le=0.05)] = 0.002
    gravity: Vec3 = (0.0, 0.0, -9.81)
    integrator: Literal["implicitfast", "euler", "rk4", "implicit"] = "implicitfast"
    impratio: PositiveFloat = 1.0
    cone: Literal["pyramidal", "elliptic"] = "pyramidal"
    density: NonNegFloat = 0.0  # of the medium (air: 1.2 kg/m^3), for drag
    viscosity: NonNegFloat = 0.0  # of the medium (air: 2e-5 Pa s)
    floor: bool = True
    iterations: Annotated[int, Field(ge=1)] | None = None
    """Constraint solver iterations (MuJoCo's default, 100, when unset)."""
    ls_iterations: Annotated[int, Field(ge=1)] | None = None
    """Line-search iterations of the solver (MuJoCo's default, 50, when unset)."""
    tolerance: NonNegFloat | None = None  # the solver's (MuJoCo's 1e-8 when unset)
    jacobian: Literal["auto", "dense", "sparse"] = "auto"  # the constraint Jacobian's storage
    equality_jdotv: bool = True
    """MuJoCo >= 3.7 subtracts J̇v (the centripetal/Coriolis term) from the reference
    acceleration of connect and weld constraint rows. `false` computes those rows as MuJoCo
    < 3.7 (and MJX) do, for benchmarks recorded in an older MuJoCo (Meta-World: 3.3.0).
    Native MuJoCo backend only, and not with `integrator: rk4`."""

    @model_validator(mode="after")
    def _jdotv_needs_split_step(self) -> PhysicsSpec:
        if not self.equality_jdotv and self.integrator == "rk4":
            raise ValueError(
                "physics.equality_jdotv: false recomputes the constraint rows between "
                "mj_step1 and mj_step2, which MuJoCo does not support with integrator "
                "rk4; use euler, implicit or implicitfast"
            )
        return self
