"""One control step's substep schedule: what happens between the physics substeps.

Computed once per kind of step (`schedule`, cached; a handler takes its kinds when it is
built) from what the step has to do: a host controller writing each substep's ctrl, the
legacy weld aref (`mujoco/legacy.py`), the scene's observation instant
(`task.observe_substep`), contact reporting. The stepping paths read it instead of
deciding for themselves: the native backend's MuJoCo batch takes a step whose schedule is
`empty`, its lockstep runs the `ops` (`mujoco/handler.py`), and so does the warp
backend's device step.

`ops` is the step as a sequence of operations on one env's data (all worlds' on warp):
- ("steps", n): `mj_step` n times (natively one call: nothing runs between them);
- ("split", k): substep k (0-based) through `mj_step1`, the legacy aref when `legacy_aref`,
  the host controller when `controller`, then `mj_step2`;
- ("mark", k): keep the state row substep k starts from (the observation instant's);
- ("keep", k): keep the joint state and poses substep k's mj_step left (the same).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Literal

Op = tuple[Literal["steps", "split", "mark", "keep"], int]


@dataclass(frozen=True)
class Schedule:
    """`substeps` physics steps; `observe`: the 1-based substep observed (None: the end of
    the step); `legacy_aref`, `controller`: each substep is split around them; `contacts`:
    the step reports the contacts of its last substep's collision pass."""

    substeps: int
    observe: int | None
    legacy_aref: bool
    controller: bool
    contacts: bool
    ops: tuple[Op, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ops", tuple(self._ops()))

    @property
    def split(self) -> bool:
        """Whether each substep runs through mj_step1 / mj_step2 (something between)."""
        return self.legacy_aref or self.controller

    @property
    def empty(self) -> bool:
        """Whether nothing runs between the substeps and nothing is read after them but
        the state and poses: one `mj_step` of all of them, no contacts reported."""
        return not self.split and self.observe is None and not self.contacts

    def _ops(self) -> list[Op]:
        n, obs = self.substeps, self.observe
        if not self.split:
            if obs is None:
                return [("steps", n)]
            before: list[Op] = [("steps", obs - 1)] if obs > 1 else []
            after: list[Op] = [("steps", n - obs)] if obs < n else []
            return [*before, ("mark", obs - 1), ("steps", 1), ("keep", obs - 1), *after]
        ops: list[Op] = []
        for k in range(n):
            if k + 1 == obs:
                ops.append(("mark", k))
            ops.append(("split", k))
            if k + 1 == obs:
                ops.append(("keep", k))
        return ops


@cache
def schedule(
    substeps: int, observe: int | None, legacy_aref: bool, controller: bool, contacts: bool
) -> Schedule:
    """The (shared, immutable) schedule of a control step of this kind."""
    return Schedule(substeps, observe, legacy_aref, controller, contacts)


__all__ = ["Op", "Schedule", "schedule"]
