"""Differential inverse kinematics, batched over envs (damped least squares)."""

from __future__ import annotations

import numpy as np

from metasim.control.linalg import scaled_eye, solve


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
    gram += scaled_eye(jac.shape[1], damping**2)
    # Jᵀ (J Jᵀ + λ² I)⁻¹ applied to e and, for the null-space term (I − J⁺ J) q_null =
    # q_null − Jᵀ (J Jᵀ + λ² I)⁻¹ J q_null, to J q_null: one solve with two right-hand
    # sides instead of an inverse (numpy's batched inverse costs more than the rest).
    use_null = nullspace_err is not None and nullspace_gain > 0
    rhs = err[..., None]
    if use_null:
        assert nullspace_err is not None
        rhs = np.concatenate([rhs, jac @ nullspace_err[..., None]], axis=2)
    sol = jt @ solve(gram, rhs)  # (B, n, 1 or 2); the damped Gram matrix is never singular
    dq = sol[..., 0]
    if use_null:
        assert nullspace_err is not None
        dq = dq + nullspace_gain * (nullspace_err - sol[..., 1])
    return np.asarray(dq)
