"""How robosuite's success checks read one state: poses and active contacts as they are
in MjData (robosuite runs no forward after its last mj_step), and its contact test
(`check_contact`: a geom of one set touches a geom of the other). LIBERO's checks, built on
robosuite's, read a state the same way."""

from __future__ import annotations

import mujoco
import numpy as np

from metasim.scene.compile import CompiledScene
from metasim.sim.base import Kinematics, geom_contacts
from metasim.tasks.predicates import TaskView, compile_predicate


def touching(contacts: np.ndarray, geoms_a: np.ndarray, geoms_b: np.ndarray) -> bool:
    """Whether any contact (n, 2) pairs a geom of set A with a geom of set B."""
    if len(contacts) == 0:
        return False
    g1, g2 = contacts[:, 0], contacts[:, 1]
    return bool(np.any((geoms_a[g1] & geoms_b[g2]) | (geoms_a[g2] & geoms_b[g1])))


def task_view(data: mujoco.MjData) -> TaskView:
    """A one-env TaskView (B = 1) of `data` as it is (nothing recomputed), contacts
    included, for success predicates (see `goal_holds`)."""
    kin = Kinematics(
        data.qpos[None].copy(),
        data.qvel[None].copy(),
        data.xpos[None].copy(),
        data.xquat[None].copy(),
        data.site_xpos[None].copy(),
        data.site_xmat.reshape(1, -1, 3, 3).copy(),
    )
    return TaskView(kin, kin.body_pos.copy(), [geom_contacts(data)])


def goal_holds(compiled: CompiledScene, data: mujoco.MjData) -> bool:
    """Whether the task's success predicate holds in `data`: after mj_forward, of that
    one state; right after mj_step, as robosuite's `_check_success` reads its data."""
    fn = compile_predicate(compiled.scene.task.success, compiled)
    return bool(fn(task_view(data))[0])
