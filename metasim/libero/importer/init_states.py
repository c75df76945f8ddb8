"""LIBERO's init states on a compiled metasim model: where each [time, qpos, qvel] row
goes (LIBERO's joint layout -> metasim's joint names) and which row an episode starts
from. Whether a task's goal holds in one MjData state is robosuite's reading
(`metasim.robosuite.success.goal_holds`), which LIBERO's `_check_success` shares."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from metasim.errors import MetasimInputError
from metasim.libero.importer.bddl import BddlProblem
from metasim.libero.importer.scene import init_states_spec
from metasim.scene.compile import CompiledScene
from metasim.tasks.init_states import joint_addresses


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
