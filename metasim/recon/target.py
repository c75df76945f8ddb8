"""Which reconstructed object the generated "pick up" task targets: the largest one the
scripted expert's parallel gripper can take from above. An object qualifies when the
narrower side of its footprint (its bounding rectangle, aligned with its yaw) fits in
the open fingers with a margin, and it is neither too flat for the finger pads nor
taller than the expert was tested on. `report.json`'s `task` says which object was
chosen and why each other one was not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from metasim.policies.grasp import OPENING
from metasim.recon.objects import ReconObject

GRIP_MARGIN = 0.01  # m of the opening kept free: scan error and the approach's slack
MAX_WIDTH = OPENING - GRIP_MARGIN
# m: lower, a scanned cluster is mostly its hull closed down to the table (its points
# start 4 mm over it), so its sides are guesses
MIN_HEIGHT = 0.01
MAX_HEIGHT = 0.4  # m: the tallest the expert was measured to lift (docs/scenes.md, expert's grasp)
MASS = 0.08  # kg given to every object: a scan cannot weigh (the Panda lifts 3 kg)


@dataclass(frozen=True)
class TargetChoice:
    """`name`: the task's object; `graspable`: whether it passed (False only when no
    object did: then the largest is kept, so the scene still has a task); `objects`:
    each object's measures and verdict, largest first."""

    name: str
    graspable: bool
    objects: list[dict[str, Any]]

    def report(self) -> dict[str, Any]:
        chosen = next(o for o in self.objects if o["name"] == self.name)
        why = (
            f"the largest object the gripper can take: {chosen['why']}"
            if self.graspable
            else "no object is graspable; the largest is kept so the scene has a task"
        )
        objects = [self._verdict(o) for o in self.objects]
        return {"object": self.name, "graspable": self.graspable, "why": why, "objects": objects}

    def _verdict(self, entry: dict[str, Any]) -> dict[str, Any]:
        """An object's entry with `chosen`, and for a graspable object passed over, why."""
        out = dict(entry, chosen=entry["name"] == self.name)
        if entry["graspable"] and not out["chosen"]:
            out["why"] += f"; graspable, but smaller than {self.name} (largest first)"
        return out


def assess(ob: ReconObject) -> dict[str, Any]:
    """One object's grasp measures (m) and verdict: `graspable` and `why`."""
    ext = np.ptp(ob.mesh.vertices, axis=0)
    width, length, height = float(min(ext[:2])), float(max(ext[:2])), float(ext[2])
    faults = []
    if width > MAX_WIDTH:
        faults.append(
            f"its narrower side ({width * 100:.1f} cm) is wider than the gripper's usable "
            f"opening ({MAX_WIDTH * 100:.0f} cm: {OPENING * 100:.0f} cm less a "
            f"{GRIP_MARGIN * 100:.0f} cm margin)"
        )
    if height < MIN_HEIGHT:
        faults.append(f"it is {height * 100:.1f} cm high, under {MIN_HEIGHT * 100:.1f} cm")
    if height > MAX_HEIGHT:
        faults.append(f"it is {height * 100:.1f} cm tall, over {MAX_HEIGHT * 100:.0f} cm")
    ok = f"{width * 100:.1f} cm across its narrower side, {height * 100:.1f} cm tall"
    return {
        "name": ob.name,
        "width_m": round(width, 4),
        "length_m": round(length, 4),
        "height_m": round(height, 4),
        "mass_kg": MASS,
        "graspable": not faults,
        "why": "; ".join(faults) if faults else ok,
    }


def choose_target(objects: list[ReconObject]) -> TargetChoice:
    """The task's object among `objects` (largest first, at least one)."""
    verdicts = [assess(ob) for ob in objects]
    fit = [v for v in verdicts if v["graspable"]]
    if fit:
        return TargetChoice(fit[0]["name"], True, verdicts)
    return TargetChoice(verdicts[0]["name"], False, verdicts)
