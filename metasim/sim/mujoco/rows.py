"""The native handler's state rows: one flat mjSTATE_INTEGRATION row per env, and where
each SimState field sits in it; the default thread count."""

from __future__ import annotations

import os

import mujoco

SPEC = mujoco.mjtState.mjSTATE_INTEGRATION
# SimState field -> mjtState component it is stored in (in the flat state's order).
_FIELDS = {
    "time": mujoco.mjtState.mjSTATE_TIME,
    "qpos": mujoco.mjtState.mjSTATE_QPOS,
    "qvel": mujoco.mjtState.mjSTATE_QVEL,
    "act": mujoco.mjtState.mjSTATE_ACT,
    "qacc_warmstart": mujoco.mjtState.mjSTATE_WARMSTART,
    "ctrl": mujoco.mjtState.mjSTATE_CTRL,
    "mocap_pos": mujoco.mjtState.mjSTATE_MOCAP_POS,
    "mocap_quat": mujoco.mjtState.mjSTATE_MOCAP_QUAT,
}


def default_threads() -> int:
    return int(os.environ.get("METASIM_THREADS", os.cpu_count() or 1))


def state_layout(model: mujoco.MjModel) -> dict[str, slice]:
    """Column slices of each SimState field inside a flat mjSTATE_INTEGRATION row."""
    offsets: dict[int, slice] = {}
    start = 0
    for bit in range(int(mujoco.mjtState.mjNSTATE)):
        comp = 1 << bit
        if not comp & int(SPEC):
            continue
        size = mujoco.mj_stateSize(model, comp)
        offsets[comp] = slice(start, start + size)
        start += size
    return {name: offsets[int(comp)] for name, comp in _FIELDS.items()}


__all__ = ["SPEC", "default_threads", "state_layout"]
