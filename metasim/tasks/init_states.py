"""Recorded initial states (`task.init_states`): episode k starts from row k mod N (of the
rows `task.init_states.rows` keeps, when it names a split).

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
from metasim.inputs import check_npz
from metasim.scene.compile import CompiledScene
from metasim.scene.task_schema import InitStatesSpec
from metasim.sim.base import ModelEdit, SimState


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
class FieldRows:
    """Per-episode values of one model row: `MjModel.<field>[index]` = rows[k mod N]."""

    field: str
    index: int
    rows: np.ndarray  # (N, width)


@dataclass(frozen=True)
class InitStates:
    """`rows` (N, 1 + nq_rec + nv_rec) and where their qpos/qvel columns go in the model:
    `qpos_index` (nq_rec,), `qvel_index` (nv_rec,)."""

    rows: np.ndarray
    qpos_index: np.ndarray
    qvel_index: np.ndarray
    stale_controller: bool
    mocap_pos: np.ndarray | None = None  # (N, nmocap, 3)
    mocap_quat: np.ndarray | None = None  # (N, nmocap, 4)
    fields: tuple[FieldRows, ...] = ()

    @classmethod
    def of(cls, spec: InitStatesSpec, compiled: CompiledScene) -> InitStates:
        """Load `spec.file` (relative to the scene file's folder) and map its joints."""
        where = f"scene {compiled.scene.name!r}, task.init_states"
        path = Path(spec.file)
        if not path.is_absolute() and compiled.source is not None:
            path = compiled.source.parent / path
        check_npz(path, "init_states file")
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: np.asarray(data[k], dtype=np.float64) for k in data.files}
            rows = arrays[spec.key]
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
        if spec.rows is not None:  # a split of the file's rows: episode k from start + k mod n
            start, stop = spec.rows
            if stop > len(rows):
                raise MetasimInputError(
                    where,
                    [f"rows: [{start}, {stop}) is past the {len(rows)} rows of {str(path)!r}"],
                )
            n = len(rows)
            arrays = {k: a[start:stop] if a.ndim and len(a) == n else a for k, a in arrays.items()}
            rows = arrays[spec.key]
        mocap = _mocap(spec, arrays, compiled, len(rows), where, str(path))
        fields = _fields(spec, arrays, compiled, len(rows), where, str(path))
        return cls(rows, qpos, qvel, spec.controller == "stale", *mocap, fields)

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
            if self.mocap_pos is not None and self.mocap_quat is not None:
                state.mocap_pos[env] = self.mocap_pos[self.index(k)]
                state.mocap_quat[env] = self.mocap_quat[self.index(k)]
        state.qacc_warmstart[:] = 0.0


def _mocap(
    spec: InitStatesSpec, arrays: dict[str, np.ndarray], compiled: CompiledScene, n: int,
    where: str, path: str,
) -> tuple[np.ndarray | None, np.ndarray | None]:  # fmt: skip
    """The file's `mocap_pos` (N, nmocap, 3) and `mocap_quat` (N, nmocap, 4) when
    `spec.mocap`, checked against the model."""
    if not spec.mocap:
        return None, None
    nm = compiled.model.nmocap
    out = []
    for key, width in (("mocap_pos", 3), ("mocap_quat", 4)):
        arr = arrays.get(key)
        if arr is None or arr.shape != (n, nm, width):
            got = "missing" if arr is None else f"shape {arr.shape}"
            raise MetasimInputError(
                where, [f"mocap: {key!r} in {path!r} must be ({n}, {nm}, {width}), {got}"]
            )
        out.append(arr)
    return out[0], out[1]


_FIELD_KIND = {"body": mujoco.mjtObj.mjOBJ_BODY, "site": mujoco.mjtObj.mjOBJ_SITE,
               "geom": mujoco.mjtObj.mjOBJ_GEOM}  # fmt: skip


def _fields(
    spec: InitStatesSpec, arrays: dict[str, np.ndarray], compiled: CompiledScene, n: int,
    where: str, path: str,
) -> tuple[FieldRows, ...]:  # fmt: skip
    """The per-episode model rows of `spec.state_fields`, checked against the model."""
    out = []
    model = compiled.model
    for j, f in enumerate(spec.state_fields):
        kind = f.field.split("_", 1)[0]
        index = mujoco.mj_name2id(model, _FIELD_KIND[kind], f.name)
        width = getattr(model, f.field).shape[1]
        arr = arrays.get(f.key)
        same = getattr(model, f"{kind}_sameframe", None) if kind != "body" else None
        problem = (
            f"the model has no {kind} {f.name!r}" if index < 0
            else f"{kind} {f.name!r} is compiled at its body's frame (sameframe), so MuJoCo "
            f"ignores a per-episode {f.field}: give it a non-zero position in the model"
            if same is not None and _frame_ignored(f.field, int(same[index]))
            else f"{f.key!r} is missing from {path!r}" if arr is None
            else f"{f.key!r} in {path!r} must be ({n}, {width}), got {arr.shape}"
            if arr.shape != (n, width) else ""
        )  # fmt: skip
        if problem:
            raise MetasimInputError(where, [f"state_fields[{j}] ({f.field}): {problem}"])
        assert arr is not None
        out.append(FieldRows(f.field, index, arr))
    return tuple(out)


def _frame_ignored(field: str, sameframe: int) -> bool:
    """Whether MuJoCo ignores `field` (a site's or geom's pos or quat) for an element
    compiled with this `sameframe` (1, 2: at the body's or inertia's frame, pos and quat
    unused; 3, 4: its rotation, quat unused)."""
    if field.endswith("_pos"):
        return sameframe in (1, 2)
    return field.endswith("_quat") and sameframe != 0


class FieldValues:
    """Each env's values of the model rows its episode's initial state sets
    (`InitStates.fields`), starting from the compiled model's; `edits` gives the per-env
    model edits for episodes starting in some envs."""

    def __init__(self, init: InitStates | None, model: mujoco.MjModel, num_envs: int) -> None:
        self.init, self.fields = init, init.fields if init is not None else ()
        self.current = [
            np.repeat(getattr(model, f.field)[f.index][None], num_envs, axis=0) for f in self.fields
        ]

    def edits(self, env_ids: np.ndarray, episodes: list[int]) -> list[ModelEdit]:
        """The edits (every env's rows) once episodes `episodes` start in `env_ids`."""
        if self.init is None or not self.fields:
            return []
        rows = [self.init.index(k) for k in episodes]
        out = []
        for current, f in zip(self.current, self.fields, strict=True):
            current[env_ids] = f.rows[rows]
            out.append(ModelEdit(f.field, f.index, current))
        return out
