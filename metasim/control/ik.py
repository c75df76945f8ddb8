"""Differential inverse kinematics, batched over envs (damped least squares)."""

from __future__ import annotations

import functools

import numpy as np


def dls_step(
    jac: np.ndarray,
    err: np.ndarray,
    damping: float = 0.05,
    nullspace_err: np.ndarray | None = None,
    nullspace_gain: float = 0.0,
) -> np.ndarray:
    """Joint displacement that moves the end effector by `err`.

    jac: (B, 6, n) world-frame Jacobian (rows: position, rotation); err: (B, 6) desired
    displacement (dx, dy, dz, rotation vector); nullspace_err: (B, n) a posture error
    pursued only in the Jacobian's null space. Returns dq: (B, n).

    dq = Jᵀ (J Jᵀ + λ² I)⁻¹ e  +  (I − J⁺ J) k q_null
    """
    jt = np.swapaxes(jac, 1, 2)
    gram = jac @ jt
    gram += _damped_eye(jac.shape[1], damping)
    pinv = jt @ np.linalg.inv(gram)  # (B, n, 6)
    dq = (pinv @ err[..., None])[..., 0]
    if nullspace_err is not None and nullspace_gain > 0:
        # (I - J+ J) e = e - J+ (J e): matrix-vector products only
        je = jac @ nullspace_err[..., None]
        dq += nullspace_gain * (nullspace_err - (pinv @ je)[..., 0])
    return np.asarray(dq)


@functools.lru_cache(maxsize=8)
def _damped_eye(n: int, damping: float) -> np.ndarray:
    """λ² I (n, n), built once per size (read-only)."""
    eye = (damping**2) * np.eye(n)
    eye.flags.writeable = False
    return eye
