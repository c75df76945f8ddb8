"""Who touched what in a MuJoCo run: contacts of the robot, and objects reached from the
robot through a chain of contacts between moving bodies (`metasim.libero.checks.parity` calls an
object *touched* when that happens at any physics substep).

Moving bodies are MuJoCo weld groups (`body_weldid`) other than the world's: an object,
a drawer or door, a robot link. The world and everything fixed to it never pass a touch on
(every object rests on the table)."""

from __future__ import annotations

import mujoco
import numpy as np

from metasim.reference import parity as kit


def spread_touch(weld: np.ndarray, data: mujoco.MjData, touched: set[int]) -> None:
    """Add to `touched` (weld ids) every moving weld group in contact with a touched one;
    `weld` (ngeom,) is each geom's weld group (0: the world and everything fixed to it)."""
    if data.ncon == 0:
        return
    pairs = weld[data.contact.geom]  # (ncon, 2)
    kit.spread_touch(pairs[(pairs != 0).all(axis=1)], touched)


def robot_hit(
    robot_geom: np.ndarray, finger_geom: np.ndarray, arm_joints: np.ndarray, data: mujoco.MjData
) -> str:
    """What the robot hits, "" for nothing: "scene" (a robot geom touches a geom of another
    body), "self" (of the robot itself; finger on finger excepted: closing on nothing), or
    "limit" (an arm joint at its limit). `robot_geom`, `finger_geom` (ngeom,) bool;
    `arm_joints` joint ids (7,). The constraint solver handles all of these; where they
    start, two simulators may part."""
    limits = data.efc_type[: data.nefc] == mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT
    if np.isin(data.efc_id[: data.nefc][limits], arm_joints).any():
        return "limit"
    if data.ncon == 0:
        return ""
    pairs = data.contact.geom  # (ncon, 2)
    if len(kit.robot_pairs(robot_geom, pairs)):
        return "scene"
    mine, fingers = robot_geom[pairs], finger_geom[pairs]
    return "self" if (mine.all(axis=1) & ~fingers.all(axis=1)).any() else ""


def object_touched(model: mujoco.MjModel, body: int, touched: set[int]) -> bool:
    """Whether any weld group of the object's subtree (root `body`) is touched."""
    parts = [b for b in range(model.nbody) if _descends(model, b, body)]
    return any(int(model.body_weldid[b]) in touched for b in parts)


def _descends(model: mujoco.MjModel, b: int, root: int) -> bool:
    while b > root:
        b = int(model.body_parentid[b])
    return b == root
