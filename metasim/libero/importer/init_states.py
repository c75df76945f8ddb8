"""LIBERO's init states on a compiled metasim model: where each [time, qpos, qvel] row
goes (LIBERO's joint layout -> metasim's joint names), which row an episode starts from,
and whether a task's goal holds in one MjData state (as LIBERO's `_check_success` reads
it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from metasim.errors import MetasimInputError
from metasim.libero.importer.bddl import BddlProblem
from metasim.libero.importer.scene import init_states_spec
from metasim.scene.compile import CompiledScene
from metasim.sim.base import Kinematics, geom_contacts
from metasim.tasks.init_states import joint_addresses
from metasim.tasks.predicates import TaskView, compile_predicate


@dataclass(frozen=True)
class InitStateMap:
    """Where LIBERO's [time, qpos, qvel] rows go in a compiled model: `qpos_index` (nq_L,)
    and `qvel_index` (nv_L,) addresses in the metasim model."""

    qpos_index: np.ndarray
    qvel_index: np.ndarray

    def apply(self, model: mujoco.MjModel, data: mujoco.MjData, row: np.ndarray) -> None:
        """Set one init state (1 + nq_L + nv_L,) into `data` and run mj_forward."""
        nq = len(self.qpos_index)
        data.qpos[:] = model.qpos0
        data.qvel[:] = 0.0
        data.qpos[self.qpos_index] = row[1 : 1 + nq]
        data.qvel[self.qvel_index] = row[1 + nq :]
        mujoco.mj_forward(model, data)


def init_state_map(problem: BddlProblem, compiled: CompiledScene) -> InitStateMap:
    """Map LIBERO's joint layout of `problem` onto `compiled` (every joint must exist)."""
    joints = init_states_spec(problem, Path())["joints"]  # LIBERO's layout, metasim's names
    try:
        qpos, qvel = joint_addresses(
            compiled.model, [(j["name"], j["nq"], j["nv"]) for j in joints]
        )
    except KeyError as exc:
        raise MetasimInputError(
            compiled.scene.name, [f"LIBERO's joint {exc.args[0]!r} is missing"]
        ) from None
    return InitStateMap(qpos, qvel)


def init_state_index(episode: int, n_states: int = 50) -> int:
    """Episode k starts from init state k mod 50, whatever env slot runs it."""
    return episode % n_states


def task_view(data: mujoco.MjData) -> TaskView:
    """A one-env TaskView (B = 1) of `data` as it is (nothing recomputed), contacts
    included, for LIBERO's predicates (see `goal_holds`)."""
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
    one state; right after mj_step, as LIBERO's `_check_success` reads robosuite's data."""
    fn = compile_predicate(compiled.scene.task.success, compiled)
    return bool(fn(task_view(data))[0])
