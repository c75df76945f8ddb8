"""`SceneIndex`: ids and addresses into a compiled scene's model, resolved once from the
model, the scene and its robot (`index_of`), for a scene compiled here or a prebuilt one."""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from metasim.scene.robots import RobotDescriptor
from metasim.scene.schema import Scene

ROBOT_PREFIX = "robot/"


@dataclass(frozen=True)
class SceneIndex:
    """Ids and addresses into the compiled model, resolved once.

    Arrays: `arm_qpos` (7,), `arm_dof` (7,), `arm_act` (7,), `object_body` (n_obj,),
    `object_qpos` (n_obj,) qpos address of each free joint (-1 if fixed),
    `object_half` (n_obj, 3) half-extents, `joint_qpos` per articulated fixture joint.
    """

    arm_qpos: np.ndarray
    arm_dof: np.ndarray
    arm_act: np.ndarray
    arm_range: np.ndarray  # (7, 2)
    home: np.ndarray  # (7,)
    gripper_act: int  # -1 without a gripper
    gripper_qpos: np.ndarray  # (k,) finger joint qpos addresses
    ee_site: int
    hand_body: int  # the body whose orientation is the hand's (descriptor hand_body)
    object_names: tuple[str, ...]
    object_body: np.ndarray
    object_qpos: np.ndarray
    object_half: np.ndarray
    joint_names: tuple[str, ...]  # articulated fixture joints, full names
    joint_qpos: np.ndarray
    joint_range: np.ndarray  # (n, 2)
    bodies: dict[str, int]
    sites: dict[str, int]


def index_of(model: mujoco.MjModel, scene: Scene, robot: RobotDescriptor) -> SceneIndex:
    def jid(name: str) -> int:
        return int(model.joint(ROBOT_PREFIX + name).id)

    arm_j = [jid(n) for n in robot.arm_joints]
    grip_act, grip_q = -1, np.zeros(0, dtype=np.int64)
    if robot.gripper is not None:
        grip_act = int(model.actuator(ROBOT_PREFIX + robot.gripper.actuator).id)
        grip_q = np.array([model.jnt_qposadr[jid(n)] for n in robot.gripper.joints])
    names = tuple(o.name for o in scene.objects)
    obj_body = np.array([model.body(n).id for n in names], dtype=np.int64)
    obj_q = np.array(
        [
            model.jnt_qposadr[model.joint(f"{o.name}/free").id] if o.free else -1
            for o in scene.objects
        ],
        dtype=np.int64,
    )
    fixture_joints = tuple(
        model.joint(i).name for i in range(model.njnt) if model.joint(i).name.endswith("/slide")
    )
    fj = [model.joint(n).id for n in fixture_joints]
    return SceneIndex(
        arm_qpos=model.jnt_qposadr[arm_j].astype(np.int64),
        arm_dof=model.jnt_dofadr[arm_j].astype(np.int64),
        arm_act=np.array(
            [model.actuator(ROBOT_PREFIX + n).id for n in robot.arm_actuators], dtype=np.int64
        ),
        arm_range=model.jnt_range[arm_j].copy(),
        home=np.array(scene.robot.init_qpos or robot.home, dtype=np.float64),
        gripper_act=grip_act,
        gripper_qpos=grip_q,
        ee_site=int(model.site(ROBOT_PREFIX + robot.ee_site).id),
        hand_body=int(
            model.body(ROBOT_PREFIX + robot.hand_body).id
            if robot.hand_body
            else model.site_bodyid[model.site(ROBOT_PREFIX + robot.ee_site).id]
        ),
        object_names=names,
        object_body=obj_body,
        object_qpos=obj_q,
        object_half=np.array([_half_extent(model, b) for b in obj_body]).reshape(-1, 3),
        joint_names=fixture_joints,
        joint_qpos=model.jnt_qposadr[fj].astype(np.int64),
        joint_range=model.jnt_range[fj].copy().reshape(-1, 2),
        bodies={model.body(i).name: i for i in range(model.nbody)},
        sites={model.site(i).name: i for i in range(model.nsite)},
    )


def _half_extent(model: mujoco.MjModel, body: int) -> np.ndarray:
    """Half-extents of the union of a body's geom boxes, in the body frame. Each geom's
    box is rotated by the geom's frame (MuJoCo turns mesh geoms to their principal axes),
    so a mesh box reads with its axes in the body's order."""
    lo: np.ndarray = np.full(3, np.inf)
    hi: np.ndarray = np.full(3, -np.inf)
    for g in np.flatnonzero(model.geom_bodyid == body):
        flat = np.zeros(9)
        mujoco.mju_quat2Mat(flat, model.geom_quat[g])
        rot = flat.reshape(3, 3)
        center = model.geom_pos[g] + rot @ model.geom_aabb[g, :3]
        half = np.abs(rot) @ model.geom_aabb[g, 3:]
        lo, hi = np.minimum(lo, center - half), np.maximum(hi, center + half)
    if not np.all(np.isfinite(lo)):
        return np.zeros(3)
    return np.asarray((hi - lo) / 2.0)
