"""What Meta-World's success checks and observation read, by Meta-World name, over a
batch of envs: `MwState` wraps one control step's `Kinematics` of a metasim model of a
Meta-World task, with each env's goal (`_target_pos`) and what the episode's reset fixed.

Naming contract (the importer's): the Sawyer's elements (those of the package's
`objects/assets/xyz_base.xml`: hand, claws, pads, end-effector sites...) carry the prefix
`robot/` in metasim's model, every other element of the task XML `world/`; a name is
looked up as given, then with `world/` (so a model compiled from the package's XML reads
the same). The accessors
take Meta-World's names; `robot_*` ones add the prefix (`robot_prefix=""` reads a model
compiled straight from the package's XML). Names resolve to ids once per (model, prefix).

Meta-World reads these after `mj_forward` on the post-step state (its `step` runs the 5
substeps, then `mj_forward`): the handler's `kinematics()` after a step, not the poses
`mj_step` leaves.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import mujoco
import numpy as np

from metasim.rotations import quat_to_mat
from metasim.sim.base import Kinematics

ROBOT_PREFIX = "robot/"
WORLD_PREFIX = "world/"  # as metasim.metaworld.importer.model names the world's elements


class UnknownElement(KeyError):
    """A Meta-World element name the model does not have (wrong task or naming)."""

    def __str__(self) -> str:
        return str(self.args[0])


class Ids:
    """Name -> id of one model's bodies, sites, joints (qpos address) and geoms, looked
    up on first use and kept (one `Ids` per (model, prefix): `ids_of`). Holds the model
    weakly, so that the cache does not keep models alive."""

    def __init__(self, model: mujoco.MjModel, robot_prefix: str) -> None:
        self._model = weakref.ref(model)
        self.robot_prefix = robot_prefix
        self._cache: dict[tuple[mujoco.mjtObj, str], int] = {}

    @property
    def model(self) -> mujoco.MjModel:
        model = self._model()
        assert model is not None, "the model of these ids is gone"
        return model

    def find(self, kind: mujoco.mjtObj, name: str) -> int:
        key = (kind, name)
        if key not in self._cache:
            i = mujoco.mj_name2id(self.model, kind, name)
            if i < 0:  # metasim's import names the task XML's elements `world/<name>`
                i = mujoco.mj_name2id(self.model, kind, WORLD_PREFIX + name)
            if i < 0:
                what = kind.name.removeprefix("mjOBJ_").lower()
                raise UnknownElement(f"the model has no {what} named {name!r}")
            self._cache[key] = i
        return self._cache[key]

    def qpos_adr(self, joint: str) -> int:
        return int(self.model.jnt_qposadr[self.find(mujoco.mjtObj.mjOBJ_JOINT, joint)])


_IDS: weakref.WeakKeyDictionary[mujoco.MjModel, dict[str, Ids]] = weakref.WeakKeyDictionary()


def ids_of(model: mujoco.MjModel, robot_prefix: str = ROBOT_PREFIX) -> Ids:
    """The (cached, per model object and prefix) name resolver of `model`."""
    per_model = _IDS.setdefault(model, {})
    if robot_prefix not in per_model:
        per_model[robot_prefix] = Ids(model, robot_prefix)
    return per_model[robot_prefix]


@dataclass(frozen=True)
class MwState:
    """One control step of B envs of one Meta-World task, for success and observation.

    kin: the step's kinematics (after mj_forward); target (B, 3): each env's
    `_target_pos`; init: the kinematics right after the episode's reset (stick-push
    reads the stick's start height from it: None is refused there); touching (B,) bool:
    whether both finger pads press on the task's main object with positive normal force
    (`pads_touching`; stick-push only, None is refused there). Arrays are not copied.
    """

    model: mujoco.MjModel
    kin: Kinematics
    target: np.ndarray
    init: Kinematics | None = None
    touching: np.ndarray | None = None
    robot_prefix: str = ROBOT_PREFIX
    ids: Ids = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", ids_of(self.model, self.robot_prefix))
        b = self.kin.qpos.shape[0]
        if np.shape(self.target) != (b, 3):
            raise ValueError(f"target must be ({b}, 3), got {np.shape(self.target)}")

    @property
    def num_envs(self) -> int:
        return int(self.kin.qpos.shape[0])

    # -- by Meta-World name (task XML elements) -------------------------------------
    def body_pos(self, name: str) -> np.ndarray:
        """(B, 3) world position of body `name`'s frame (Meta-World's `get_body_com`)."""
        return self.kin.body_pos[:, self.ids.find(mujoco.mjtObj.mjOBJ_BODY, name)]

    def body_quat(self, name: str) -> np.ndarray:
        """(B, 4) world orientation (w, x, y, z) of body `name` (MuJoCo's `xquat`)."""
        return self.kin.body_quat[:, self.ids.find(mujoco.mjtObj.mjOBJ_BODY, name)]

    def body_mat(self, name: str) -> np.ndarray:
        """(B, 3, 3) world rotation of body `name` (MuJoCo's `xmat`)."""
        return quat_to_mat(self.body_quat(name))

    def site_pos(self, name: str) -> np.ndarray:
        """(B, 3) world position of site `name`."""
        return self.kin.site_pos[:, self.ids.find(mujoco.mjtObj.mjOBJ_SITE, name)]

    def site_mat(self, name: str) -> np.ndarray:
        """(B, 3, 3) world rotation of site `name`."""
        return self.kin.site_mat[:, self.ids.find(mujoco.mjtObj.mjOBJ_SITE, name)]

    def joint_qpos(self, name: str) -> np.ndarray:
        """(B,) position of the hinge or slide joint `name`."""
        return self.kin.qpos[:, self.ids.qpos_adr(name)]

    def geom_pos(self, name: str) -> np.ndarray:
        """(B, 3) world position of geom `name` (its body's pose applied to the model's
        `geom_pos`: what MuJoCo's `geom_xpos` holds)."""
        g = self.ids.find(mujoco.mjtObj.mjOBJ_GEOM, name)
        body = int(self.model.geom_bodyid[g])
        rot = quat_to_mat(self.kin.body_quat[:, body])
        return self.kin.body_pos[:, body] + rot @ self.model.geom_pos[g]

    def geom_mat(self, name: str) -> np.ndarray:
        """(B, 3, 3) world rotation of geom `name` (MuJoCo's `geom_xmat`)."""
        g = self.ids.find(mujoco.mjtObj.mjOBJ_GEOM, name)
        body = int(self.model.geom_bodyid[g])
        return quat_to_mat(self.kin.body_quat[:, body]) @ quat_to_mat(self.model.geom_quat[g])

    def init_body_pos(self, name: str) -> np.ndarray:
        """(B, 3) body `name`'s position right after the episode's reset."""
        if self.init is None:
            raise ValueError(f"this check reads {name!r} at the episode's reset: pass init")
        return self.init.body_pos[:, self.ids.find(mujoco.mjtObj.mjOBJ_BODY, name)]

    # -- the Sawyer (prefixed names) --------------------------------------------------
    def robot_body_pos(self, name: str) -> np.ndarray:
        return self.body_pos(self.ids.robot_prefix + name)

    def robot_site_pos(self, name: str) -> np.ndarray:
        return self.site_pos(self.ids.robot_prefix + name)

    def tcp_center(self) -> np.ndarray:
        """(B, 3) the tool centre: the midpoint of the two end-effector sites."""
        right = self.robot_site_pos("rightEndEffector")
        return (right + self.robot_site_pos("leftEndEffector")) / 2.0

    def hand_pos(self) -> np.ndarray:
        """(B, 3) the `hand` body's position (observation[0:3], before clipping)."""
        return self.robot_body_pos("hand")

    def gripper_distance(self) -> np.ndarray:
        """(B,) the claws' distance apart over 0.1 m, clipped to [0, 1] (observation[3])."""
        apart = self.robot_body_pos("rightclaw") - self.robot_body_pos("leftclaw")
        return np.clip(np.sqrt(np.sum(apart * apart, axis=1)) / 0.1, 0.0, 1.0)


PosFn = Callable[[MwState], np.ndarray]  # state -> (B, 3)


def pads_touching(
    model: mujoco.MjModel, data: mujoco.MjData, geom: str, robot_prefix: str = ROBOT_PREFIX
) -> bool:
    """Meta-World's `touching_object` for one env: the contacts of `geom` with each finger
    pad geom (`leftpad_geom`, `rightpad_geom`) have a positive summed normal force
    (`efc_force` at each contact's first row) on both pads. `data` after mj_forward."""
    ids = ids_of(model, robot_prefix)
    obj = ids.find(mujoco.mjtObj.mjOBJ_GEOM, geom)
    pads = [
        ids.find(mujoco.mjtObj.mjOBJ_GEOM, robot_prefix + name)
        for name in ("leftpad_geom", "rightpad_geom")
    ]
    n = int(data.ncon)
    geoms = np.asarray(data.contact.geom[:n]).reshape(n, 2)
    force = np.asarray(data.efc_force)[np.asarray(data.contact.efc_address[:n], dtype=int)]
    with_obj = np.any(geoms == obj, axis=1)
    return all(float(np.sum(force[with_obj & np.any(geoms == pad, axis=1)])) > 0 for pad in pads)
