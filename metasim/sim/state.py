"""What every backend's handler takes and returns: the batch state, the kinematics it
exposes, per-env model edits, host and device controllers run inside a control step, and
the error a backend raises for a scene it cannot simulate. The bottom of the sim layer:
it imports no other module of it (`metasim.sim.base` re-exports these names)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, Protocol

import mujoco
import numpy as np


@dataclass
class SimState:
    """Full physics state of a batch of envs; enough to continue stepping exactly.

    Shapes: time (B,), qpos (B, nq), qvel (B, nv), act (B, na), ctrl (B, nu),
    qacc_warmstart (B, nv), mocap_pos (B, nmocap, 3), mocap_quat (B, nmocap, 4).
    """

    time: np.ndarray
    qpos: np.ndarray
    qvel: np.ndarray
    act: np.ndarray
    ctrl: np.ndarray
    qacc_warmstart: np.ndarray
    mocap_pos: np.ndarray
    mocap_quat: np.ndarray

    def take(self, env_ids: np.ndarray | Sequence[int]) -> SimState:
        """The sub-batch for `env_ids` (copies)."""
        idx = np.asarray(env_ids)
        return SimState(**{f.name: getattr(self, f.name)[idx].copy() for f in fields(self)})

    def copy(self) -> SimState:
        return SimState(**{f.name: getattr(self, f.name).copy() for f in fields(self)})

    def allclose(self, other: SimState, atol: float = 0.0) -> bool:
        return all(
            np.allclose(getattr(self, f.name), getattr(other, f.name), atol=atol, rtol=0)
            for f in fields(self)
        )


@dataclass
class Kinematics:
    """The current joint state and the positions computed from it. Shapes: qpos (B, nq),
    qvel (B, nv), body_pos (B, nbody, 3), body_quat (B, nbody, 4), site_pos (B, nsite, 3),
    site_mat (B, nsite, 3, 3). Read-only views owned by the handler."""

    qpos: np.ndarray
    qvel: np.ndarray
    body_pos: np.ndarray
    body_quat: np.ndarray
    site_pos: np.ndarray
    site_mat: np.ndarray


# The instants of a control step whose kinematics a handler gives (`Handler.kinematics`)
Instant = Literal["forward", "step", "observed"]
INSTANTS: tuple[Instant, ...] = ("forward", "step", "observed")


class UnsupportedScene(ValueError):
    """The backend cannot simulate this scene; the message names the feature and element."""


@dataclass(frozen=True)
class ModelEdit:
    """A per-env change of one model field, e.g. ("geom_friction", geom_id, (B, 3) values).

    `field` names an `MjModel` attribute, whose row `index` is set, or is "gravity"
    (`opt.gravity`, values (B, 3), `index` ignored); `values` has the env axis first.
    """

    field: str
    index: int
    values: np.ndarray


# A host controller run inside the control step: (env, substep k, model, data after
# mj_step1) -> writes data.ctrl for that physics substep (osc_pose does this). One that
# also has `batch(k, models, datas)` (every env's model and data after mj_step1) can be
# run for all envs at once: a backend may then step the envs substep by substep together.
Substep = Callable[[int, int, mujoco.MjModel, mujoco.MjData], None]


class DeviceController(Protocol):
    """A controller's device side, for a backend that keeps the physics on a device (warp):
    `upload` its per-env state before a control step, `substep(k, data)` after each
    physics substep's first half (the backend's Data: kinematics, inertia and bias
    computed) to write that substep's ctrl on the device, `download` the state the
    substeps changed after the last one (returns per-env flags (B,) bool of a numerical
    fault, e.g. a singular matrix). A host `Substep` that can run on a device has
    `on_device(backend, model, device_model, device) -> DeviceController | None`."""

    def upload(self) -> None: ...

    def substep(self, k: int, data: Any) -> None: ...

    def download(self) -> np.ndarray: ...


def geom_contacts(data: mujoco.MjData) -> np.ndarray:
    """(n, 2) geom ids of the active contacts of one env (after mj_forward/mj_step)."""
    n = int(data.ncon)
    return np.array(data.contact.geom[:n], dtype=np.int64).reshape(n, 2)


__all__ = [
    "INSTANTS",
    "DeviceController",
    "Instant",
    "Kinematics",
    "ModelEdit",
    "SimState",
    "Substep",
    "UnsupportedScene",
    "geom_contacts",
]
