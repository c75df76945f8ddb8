"""robosuite's success tests (`_check_success` of its tasks) as metasim predicate kinds:
pure functions of one state's kinematics and contacts, with robosuite's strict
comparisons. Names are the compiled model's (the world keeps robosuite's names; the
robot's carry metasim's `robot/` prefix); a missing name is an input error at compile.

- `rs_above: {body, z}`: the body's position is higher than z;
- `rs_inside: {body, low, high, frame}`: strictly inside the box (x, y relative to body
  `frame`'s position when given; z always absolute), as PickPlace's `not_in_bin` and
  NutAssembly's `on_peg` test;
- `rs_apart: {body, site, distance}`: the site is farther than `distance` from the body
  (robosuite's `r_reach < 0.6`);
- `rs_touching: {a, b}`: a geom of body a touches a geom of body b (`check_contact`);
- `rs_grasping: {body}`: both finger pads touch the body (`_check_grasp`);
- `rs_joint_above: {joint, value}`: the joint's position exceeds the value.
"""

from __future__ import annotations

import mujoco
import numpy as np

from metasim.errors import MetasimInputError
from metasim.robosuite.success import touching
from metasim.scene.compile import ROBOT_PREFIX, CompiledScene
from metasim.scene.kinds import PREDICATE_KINDS
from metasim.scene.predicate_base import PredicateBase
from metasim.scene.schema_base import Strict
from metasim.tasks.predicates import PredFn, TaskView, predicate

Vec3 = tuple[float, float, float]
FINGER_PADS = ("gripper0_finger1_pad_collision", "gripper0_finger2_pad_collision")


class AboveArgs(Strict):
    body: str
    z: float


class InsideArgs(Strict):
    body: str
    low: Vec3
    high: Vec3
    frame: str | None = None


class ApartArgs(Strict):
    body: str
    site: str
    distance: float


class TouchingArgs(Strict):
    a: str
    b: str


class GraspingArgs(Strict):
    body: str


class JointAboveArgs(Strict):
    joint: str
    value: float


@PREDICATE_KINDS.register("rs_above")
class RsAbove(PredicateBase):
    rs_above: AboveArgs


@PREDICATE_KINDS.register("rs_inside")
class RsInside(PredicateBase):
    rs_inside: InsideArgs


@PREDICATE_KINDS.register("rs_apart")
class RsApart(PredicateBase):
    rs_apart: ApartArgs


@PREDICATE_KINDS.register("rs_touching")
class RsTouching(PredicateBase):
    rs_touching: TouchingArgs

    def uses_contacts(self) -> bool:
        return True


@PREDICATE_KINDS.register("rs_grasping")
class RsGrasping(PredicateBase):
    rs_grasping: GraspingArgs

    def uses_contacts(self) -> bool:
        return True


@PREDICATE_KINDS.register("rs_joint_above")
class RsJointAbove(PredicateBase):
    rs_joint_above: JointAboveArgs


def _id(c: CompiledScene, kind: str, name: str) -> int:
    """The id of element `name` of `kind` (body, site, joint, geom) in the compiled model."""
    i = mujoco.mj_name2id(c.model, getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}"), name)
    if i < 0:
        raise MetasimInputError(c.scene.name, [f"task.success names the {kind} {name!r}: absent"])
    return int(i)


def _geoms(c: CompiledScene, body: int) -> np.ndarray:
    """(ngeom,) bool: the body's geoms."""
    return np.asarray(c.model.geom_bodyid == body)


@predicate(RsAbove)
def _above(node: RsAbove, c: CompiledScene) -> PredFn:
    b, z = _id(c, "body", node.rs_above.body), node.rs_above.z
    return lambda v: v.kin.body_pos[:, b, 2] > z


@predicate(RsInside)
def _inside(node: RsInside, c: CompiledScene) -> PredFn:
    a = node.rs_inside
    b = _id(c, "body", a.body)
    f = None if a.frame is None else _id(c, "body", a.frame)
    low, high = np.asarray(a.low), np.asarray(a.high)

    def fn(v: TaskView) -> np.ndarray:
        p = v.kin.body_pos[:, b].copy()
        if f is not None:
            p[:, :2] -= v.kin.body_pos[:, f, :2]
        return np.all((p > low) & (p < high), axis=-1)

    return fn


@predicate(RsApart)
def _apart(node: RsApart, c: CompiledScene) -> PredFn:
    a = node.rs_apart
    b, s = _id(c, "body", a.body), _id(c, "site", a.site)
    return lambda v: (
        np.linalg.norm(v.kin.site_pos[:, s] - v.kin.body_pos[:, b], axis=-1) > a.distance
    )


def _touch_fn(ga: np.ndarray, gb: np.ndarray) -> PredFn:
    def fn(v: TaskView) -> np.ndarray:
        if v.contacts is None:
            raise ValueError("a robosuite contact test needs TaskView.contacts")
        return np.array([touching(k, ga, gb) for k in v.contacts])

    return fn


@predicate(RsTouching)
def _touching(node: RsTouching, c: CompiledScene) -> PredFn:
    a, b = (_id(c, "body", n) for n in (node.rs_touching.a, node.rs_touching.b))
    return _touch_fn(_geoms(c, a), _geoms(c, b))


@predicate(RsGrasping)
def _grasping(node: RsGrasping, c: CompiledScene) -> PredFn:
    obj = _geoms(c, _id(c, "body", node.rs_grasping.body))
    pads = [np.arange(c.model.ngeom) == _id(c, "geom", ROBOT_PREFIX + p) for p in FINGER_PADS]
    left, right = (_touch_fn(p, obj) for p in pads)
    return lambda v: left(v) & right(v)


@predicate(RsJointAbove)
def _joint_above(node: RsJointAbove, c: CompiledScene) -> PredFn:
    j = _id(c, "joint", node.rs_joint_above.joint)
    adr, value = int(c.model.jnt_qposadr[j]), node.rs_joint_above.value
    return lambda v: v.kin.qpos[:, adr] > value
