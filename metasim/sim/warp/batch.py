"""Batched state in and out of a MuJoCo Warp `Data` (one world per env).

The flat state rows are MuJoCo's `mjSTATE_INTEGRATION` layout (as the native backend's),
moved through `mujoco_warp.get_state` / `set_state` in float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metasim.sim.mujoco.rows import SPEC

__all__ = ["SPEC", "read_state", "write_state"]


def read_state(m: Any, d: Any, nstate: int, nworld: int) -> np.ndarray:
    """(nworld, nstate) float64 rows of every world's integration state."""
    import mujoco_warp as mjw
    import warp as wp

    out = wp.zeros((nworld, nstate), dtype=wp.float32, device=d.qpos.device)
    mjw.get_state(m, d, out, int(SPEC))
    return np.asarray(out.numpy(), dtype=np.float64)


def write_state(m: Any, d: Any, rows: np.ndarray, active: np.ndarray) -> None:
    """Load `rows` (nworld, nstate) into the worlds where `active` (nworld,) is true."""
    import mujoco_warp as mjw
    import warp as wp

    device = d.qpos.device
    state: Any = wp.array(rows.astype(np.float32), dtype=wp.float32, device=device)
    mask: Any = wp.array(active.astype(bool), dtype=bool, device=device)
    mjw.set_state(m, d, state, int(SPEC), mask)
