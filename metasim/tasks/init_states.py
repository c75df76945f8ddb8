"""Recorded initial states (`task.init_states`): episode k starts from row k mod N.

The rows are [time, qpos, qvel] over a list of named joints (LIBERO's flattened MjSim
state); they are mapped onto the compiled model by joint name once, so the model may
order or number its joints differently. Joints the rows do not cover keep the model's
`qpos0` and rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from metasim.errors import MetasimInputError
from metasim.scene.compile import CompiledScene
from metasim.scene.task_schema import InitStatesSpec
from metasim.sim.base import SimState


def joint_addresses(
    model: mujoco.MjModel, joints: list[tuple[str, int, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """qpos (sum nq,) and qvel (sum nv,) addresses of the named joints (name, nq, nv), in
    order: where a recorded [qpos, qvel] row's columns go. KeyError(name) if one is absent."""
    qpos: list[int] = []
    qvel: list[int] = []
    for name, nq, nv in joints:
        try:
            j = model.joint(name).id
        except KeyError:
            raise KeyError(name) from None
        qpos += range(model.jnt_qposadr[j], model.jnt_qposadr[j] + nq)
        qvel += range(model.jnt_dofadr[j], model.jnt_dofadr[j] + nv)
    return np.array(qpos, dtype=np.int64), np.array(qvel, dtype=np.int64)


@dataclass(frozen=True)
class InitStates:
    """`rows` (N, 1 + nq_rec + nv_rec) and where their qpos/qvel columns go in the model:
    `qpos_index` (nq_rec,), `qvel_index` (nv_rec,)."""

    rows: np.ndarray
    qpos_index: np.ndarray
    qvel_index: np.ndarray
    stale_controller: bool

    @classmethod
    def of(cls, spec: InitStatesSpec, compiled: CompiledScene) -> InitStates:
        """Load `spec.file` (relative to the scene file's folder) and map its joints."""
        where = f"scene {compiled.scene.name!r}, task.init_states"
        path = Path(spec.file)
        if not path.is_absolute() and compiled.source is not None:
            path = compiled.source.parent / path
        try:
            with np.load(path, allow_pickle=False) as data:
                rows = np.asarray(data[spec.key], dtype=np.float64)
        except (OSError, KeyError, ValueError) as exc:
            raise MetasimInputError(where, [f"file {str(path)!r}: {exc}"]) from None
        try:
            qpos, qvel = joint_addresses(
                compiled.model, [(j.name, j.nq, j.nv) for j in spec.joints]
            )
        except KeyError as exc:
            raise MetasimInputError(
                where, [f"joints: the model has no joint {exc.args[0]!r}"]
            ) from None
        width = 1 + len(qpos) + len(qvel)
        if rows.ndim != 2 or rows.shape[1] != width or len(rows) == 0:
            raise MetasimInputError(
                where,
                [f"{spec.key!r} in {str(path)!r}: expected (N >= 1, {width}) rows of "
                 f"[time, qpos, qvel] over the listed joints, got shape {rows.shape}"],
            )  # fmt: skip
        return cls(rows, qpos, qvel, spec.controller == "stale")

    def index(self, episode: int) -> int:
        """The row episode `episode` starts from."""
        return episode % len(self.rows)

    def write(self, state: SimState, qpos0: np.ndarray, episodes: list[int]) -> None:
        """Write the rows of `episodes` into `state` (one env per episode, in order)."""
        nq = len(self.qpos_index)
        for env, k in enumerate(episodes):
            row = self.rows[self.index(k)]
            state.time[env] = row[0]
            state.qpos[env] = qpos0
            state.qpos[env, self.qpos_index] = row[1 : 1 + nq]
            state.qvel[env] = 0.0
            state.qvel[env, self.qvel_index] = row[1 + nq :]
        state.qacc_warmstart[:] = 0.0
