"""Trajectory parity of a backend against native MuJoCo on one task: the same episode
(init state, fixture draw, controller start) in two vector envs, the same smooth random
actions, and per control step the end-effector distance, each object's distance and
whether the robot touches anything other than itself (in the native run).

The criterion the GPU-physics work is held to (docs/support_matrix.md): the end effector
within 0.1 mm until the robot's first contact, objects the robot has not touched within
1 mm; where the runs part after a contact, the result says at which step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.reference import parity
from metasim.scene.compile import CompiledScene

EEF_BEFORE_CONTACT_M = 1e-4
OBJECT_AT_REST_M = 1e-3


@dataclass
class BackendParity:
    """Per control step (T,): `eef` distance (m); `objects[name]` distances (m);
    `contact` whether the robot touched a non-robot geom in the native run; `touched[name]`
    the first step the robot touched that object (-1: never)."""

    backend: str
    eef: np.ndarray
    objects: dict[str, np.ndarray]
    contact: np.ndarray
    touched: dict[str, int] = field(default_factory=dict)

    @property
    def first_contact(self) -> int:
        """The first step (0-based) with a robot contact; T if none."""
        return parity.free_steps(parity.contact_step(self.contact), len(self.contact))

    def eef_before_contact(self) -> float:
        return parity.before_contact(self.eef, self.first_contact)

    def object_at_rest(self) -> float:
        """Worst object distance over the steps before the robot's first contact (after
        it, an object may be pushed by the robot or by another object)."""
        objects = parity.worst(self.objects, None, len(self.eef))
        return parity.before_contact(objects, self.first_contact)

    def parted_at(self, tol: float = EEF_BEFORE_CONTACT_M) -> int:
        """First step where the end effectors are farther apart than `tol`; -1 if never."""
        over = np.flatnonzero(self.eef > tol)
        return int(over[0]) if len(over) else -1

    def summary(self) -> dict[str, float | int | str]:
        return {
            "backend": self.backend,
            "steps": len(self.eef),
            "first_contact": self.first_contact,
            "eef_before_contact_m": self.eef_before_contact(),
            "objects_at_rest_m": self.object_at_rest(),
            "eef_max_m": float(self.eef.max()),
            "parted_at": self.parted_at(),
        }


def backend_parity(
    compiled: CompiledScene,
    backend: str,
    episode: int,
    steps: int = 100,
    seed: int = 0,
    **backend_options: Any,
) -> BackendParity:
    """Run episode `episode` (its init state and seed) of `compiled` on `backend` and on
    native MuJoCo, one env each, for `steps` control steps of smooth random actions."""
    envs = [
        MetasimVectorEnv(compiled, num_envs=1, backend=name, seed=seed, autoreset=False, **opts)
        for name, opts in ((backend, backend_options), ("mujoco", {}))
    ]
    try:
        test, ref = envs
        ref.handler.track_contacts = True
        for env in envs:
            env.reset(options={"env_ids": [0], "seeds": [episode], "episodes": [episode]})
        low, high = ref.controller.bounds()
        block = parity.GRIPPER_BLOCK if len(low) == 7 else None  # osc_pose's gripper
        actions = parity.smooth_actions(
            low, high, steps, 1000 * seed + episode, gripper_block=block
        )
        m, idx = compiled.model, compiled.index
        robot_root = int(m.body_rootid[idx.hand_body])
        geom_robot = m.body_rootid[m.geom_bodyid] == robot_root
        bodies = _object_bodies(compiled, robot_root)
        obj_geoms = {name: np.flatnonzero(m.geom_bodyid == body) for name, body in bodies}
        eef = np.zeros(steps)
        objects = {name: np.zeros(steps) for name, _ in bodies}
        contact = np.zeros(steps, dtype=bool)
        touched = {name: -1 for name, _ in bodies}
        for t in range(steps):
            for env in envs:
                env.step(actions[t][None])
            a, b = test.handler.kinematics(), ref.handler.kinematics()
            eef[t] = np.linalg.norm(a.site_pos[0, idx.ee_site] - b.site_pos[0, idx.ee_site])
            for name, body in bodies:
                objects[name][t] = np.linalg.norm(a.body_pos[0, body] - b.body_pos[0, body])
            mixed = parity.robot_pairs(geom_robot, ref.handler.contacts()[0])
            contact[t] = len(mixed) > 0
            for name, geoms in obj_geoms.items():
                if touched[name] < 0 and np.isin(mixed, geoms).any():
                    touched[name] = t
        return BackendParity(backend, eef, objects, contact, touched)
    finally:
        for env in envs:
            env.close()


def _object_bodies(compiled: CompiledScene, robot_root: int) -> list[tuple[str, int]]:
    """The scene's objects (name, body): those it declares, else (an imported model that
    declares none, as Meta-World's) every body outside the robot that has a joint (the
    objects, drawers, doors and buttons of the package's XML)."""
    idx, m = compiled.index, compiled.model
    if len(idx.object_names):
        return list(zip(idx.object_names, (int(b) for b in idx.object_body), strict=True))
    return [
        (m.body(b).name or f"body{b}", b)
        for b in range(1, m.nbody)
        if m.body_jntnum[b] > 0 and int(m.body_rootid[b]) != robot_root
    ]
