"""How the scripted expert grasps an object, from its geometry: which of the object's
body axes the fingers close along (the narrower horizontal side of a box, the diameter of
a lying cylinder; none for a sphere or a standing cylinder, round about the vertical),
how tall it stands, and the grasp height that holds it (as low as the fingers reach,
nearest the centre of mass, with the fingertips clear of the table and the palm clear of
the object's top).

The object's resting orientation is its scene `quat` (the scene's `init` turns it about
the vertical only), so which body axis is vertical is fixed per scene; at run time the
closing axis is read from the object's current orientation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from metasim.policies.base import PolicyContext
from metasim.rotations import quat_to_mat

# Panda hand, from the grasp site (the pads' centre): the fingertips reach 2 cm below it,
# the palm sits 3.8 cm above it; fully open the fingers are 8 cm apart.
TIP_BELOW = 0.02
PALM_ABOVE = 0.038
OPENING = 0.08
TABLE_CLEAR = 0.002  # fingertips over the table at the grasp
PALM_CLEAR = 0.01  # palm under a tall object's top at the grasp
ROUND = ("sphere", "cylinder", "capsule")


@dataclass(frozen=True)
class GraspGeometry:
    """`axis`: the body axis (0, 1, 2) the fingers close along, None when any horizontal
    direction will do; `period`: the closing direction's symmetry (pi; pi/2 for a square
    footprint); `half_z`: the object's half-height as it rests; `width`: the extent the
    fingers close across (m)."""

    axis: int | None
    period: float
    half_z: float
    width: float

    @property
    def grasp_dz(self) -> float:
        """Grasp site height over the object's centre: as low as possible (nearest the
        centre of mass, so a tall object does not pivot in the fingers), with the
        fingertips off the table and the palm clear of the object's top."""
        return max(TIP_BELOW + TABLE_CLEAR - self.half_z, self.half_z - PALM_ABOVE + PALM_CLEAR)

    @property
    def hover(self) -> float:
        """Approach height over the object's centre: the fingertips 5 cm over its top."""
        return max(0.1, self.half_z + TIP_BELOW + 0.05)


def grasp_geometry(ctx: PolicyContext, name: str) -> GraspGeometry:
    """The grasp of object `name` (see `GraspGeometry`)."""
    spec = next(o for o in ctx.compiled.scene.objects if o.name == name)
    half = np.asarray(ctx.compiled.index.object_half[ctx.object_names.index(name)], dtype=float)
    rot = quat_to_mat(np.asarray(spec.quat, dtype=float))
    half_z = float(np.abs(rot[2]) @ half)
    up = int(np.argmax(np.abs(rot[2])))  # the body axis nearest the vertical
    flat = [a for a in range(3) if a != up]
    if spec.shape == "sphere" or (spec.shape in ROUND and up == 2):
        return GraspGeometry(None, np.pi, half_z, 2.0 * float(half[0]))
    if spec.shape in ROUND:  # lying: close across the diameter, not along the axis
        across = next(a for a in flat if a != 2)
        return GraspGeometry(across, np.pi, half_z, 2.0 * float(half[across]))
    a, b = flat
    narrow = a if half[a] <= half[b] else b
    square = abs(half[a] - half[b]) < 1e-6
    return GraspGeometry(narrow, np.pi / 2 if square else np.pi, half_z, 2.0 * float(half[narrow]))


def closing_yaw(quat: np.ndarray, axis: int) -> np.ndarray:
    """(B,) gripper yaw that closes the fingers along body `axis` of objects at (B, 4)
    orientations. The gripper at yaw 0 closes along world y, so its yaw is the axis's
    horizontal heading less 90 degrees."""
    direction = quat_to_mat(quat)[:, :, axis]
    return np.asarray(np.arctan2(direction[:, 1], direction[:, 0]) - np.pi / 2)
