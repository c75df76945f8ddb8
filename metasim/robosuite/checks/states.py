"""One state on both sides: a robosuite state (qpos in robosuite's joint order, the placed
bodies' poses) written into metasim's compiled model, and metasim's success there
against robosuite's `_check_success` of the same state (`success_agreement`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from metasim.robosuite.importer.export import export
from metasim.robosuite.importer.scene import init_states
from metasim.robosuite.success import goal_holds
from metasim.scene.compile import CompiledScene
from metasim.tasks.init_states import joint_addresses


@dataclass(frozen=True)
class StateMap:
    """Where robosuite's qpos (nq,) and qvel (nv,) go in metasim's model, and which of its
    bodies the placed poses (k, 3|4) go to."""

    qpos: np.ndarray
    qvel: np.ndarray
    bodies: np.ndarray

    def apply(self, compiled: CompiledScene, data: mujoco.MjData, state: dict[str, Any]) -> None:
        """Write `state` (qpos, qvel, optional body_pos/body_quat) and run mj_forward."""
        m = compiled.model
        data.qpos[:] = m.qpos0
        data.qvel[:] = 0.0
        data.qpos[self.qpos] = state["qpos"]
        data.qvel[self.qvel] = state["qvel"]
        if len(self.bodies) and state.get("body_pos") is not None:
            m.body_pos[self.bodies] = state["body_pos"]
            m.body_quat[self.bodies] = state["body_quat"]
        mujoco.mj_forward(m, data)


def state_map(task: str, compiled: CompiledScene) -> StateMap:
    spec = init_states(export(task))
    qpos, qvel = joint_addresses(
        compiled.model, [(j["name"], j["nq"], j["nv"]) for j in spec["joints"]]
    )
    placed = export(task).meta["placed"]
    return StateMap(qpos, qvel, np.array([compiled.model.body(b).id for b in placed], dtype=int))


def metasim_successes(
    task: str, compiled: CompiledScene, states: list[dict[str, Any]]
) -> np.ndarray:
    """(N,) bool: metasim's success predicate on each robosuite state."""
    smap, data = state_map(task, compiled), mujoco.MjData(compiled.model)
    out = []
    for st in states:
        smap.apply(compiled, data, st)
        out.append(goal_holds(compiled, data))
    return np.array(out)


def split(rows: dict[str, np.ndarray], n: int) -> list[dict[str, Any]]:
    """Per-state dicts of batched arrays (qpos (N, nq), ...)."""
    return [{k: (None if v is None else v[i]) for k, v in rows.items()} for i in range(n)]
