"""Rotation helpers on numpy arrays, batched over a leading axis where noted.

Quaternions are MuJoCo's (w, x, y, z). Shapes are written as (B, 4), (B, 3, 3).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def yaw_quat(yaw: float) -> np.ndarray:
    """Rotation by `yaw` about +z, shape (4,)."""
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])


def mat_to_quat(mat: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices to (..., 4) unit quaternions with w >= 0.

    Shepperd's method: for each matrix, pivot on the largest of (w, x, y, z).
    """
    m = np.asarray(mat, dtype=np.float64)
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    cands = np.empty((*m.shape[:-2], 4, 4))  # row k is 4 q_k q, pivoting on component k
    cands[..., 0, :] = np.moveaxis(
        np.array([1 + m00 + m11 + m22, m21 - m12, m02 - m20, m10 - m01]), 0, -1
    )
    cands[..., 1, :] = np.moveaxis(
        np.array([m21 - m12, 1 + m00 - m11 - m22, m01 + m10, m02 + m20]), 0, -1
    )
    cands[..., 2, :] = np.moveaxis(
        np.array([m02 - m20, m01 + m10, 1 - m00 + m11 - m22, m12 + m21]), 0, -1
    )
    cands[..., 3, :] = np.moveaxis(
        np.array([m10 - m01, m02 + m20, m12 + m21, 1 - m00 - m11 + m22]), 0, -1
    )
    diag = np.diagonal(cands, axis1=-2, axis2=-1)
    pivot = np.argmax(diag, axis=-1)
    q = np.take_along_axis(cands, pivot[..., None, None], axis=-2)[..., 0, :]
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return q * np.where(q[..., :1] < 0, -1.0, 1.0)


def quat_to_mat(q: np.ndarray) -> np.ndarray:
    """(..., 4) quaternions to (..., 3, 3) rotation matrices."""
    q = np.asarray(q, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    out = np.empty((*q.shape[:-1], 3, 3))
    out[..., 0, 0] = 1 - 2 * (y * y + z * z)
    out[..., 0, 1] = 2 * (x * y - w * z)
    out[..., 0, 2] = 2 * (x * z + w * y)
    out[..., 1, 0] = 2 * (x * y + w * z)
    out[..., 1, 1] = 1 - 2 * (x * x + z * z)
    out[..., 1, 2] = 2 * (y * z - w * x)
    out[..., 2, 0] = 2 * (x * z - w * y)
    out[..., 2, 1] = 2 * (y * z + w * x)
    out[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product, (..., 4) x (..., 4)."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, dtype=np.float64), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, dtype=np.float64), -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        -1,
    )


def axis_angle_to_mat(rotvec: np.ndarray) -> np.ndarray:
    """(..., 3) rotation vectors (axis * angle) to (..., 3, 3) matrices (Rodrigues)."""
    v = np.asarray(rotvec, dtype=np.float64)
    angle = np.linalg.norm(v, axis=-1, keepdims=True)
    half = angle / 2
    axis = v / np.maximum(angle, 1e-12)
    quat = np.concatenate([np.cos(half), axis * np.sin(half)], axis=-1)
    return quat_to_mat(quat)


def mat_to_axis_angle(mat: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices to (..., 3) rotation vectors."""
    q = mat_to_quat(mat)
    vec = q[..., 1:]
    sin_half = np.linalg.norm(vec, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(sin_half, q[..., :1])
    return vec / np.maximum(sin_half, 1e-12) * angle


def look_at_quat(
    pos: Sequence[float], target: Sequence[float], up: Sequence[float] = (0.0, 0.0, 1.0)
) -> np.ndarray:
    """Quaternion of a MuJoCo camera at `pos` looking at `target` (camera looks along -z,
    image up is +y). Falls back to another up vector when `up` is parallel to the view."""
    fwd = np.asarray(target, dtype=np.float64) - np.asarray(pos, dtype=np.float64)
    fwd /= max(float(np.linalg.norm(fwd)), 1e-12)
    up_v = np.asarray(up, dtype=np.float64)
    right = np.cross(fwd, up_v)
    if np.linalg.norm(right) < 1e-6:
        right = np.cross(fwd, np.array([0.0, 1.0, 0.0]))
    right /= np.linalg.norm(right)
    cam_up = np.cross(right, fwd)
    mat = np.stack([right, cam_up, -fwd], axis=1)
    return mat_to_quat(mat)


def yaw_of(mat: np.ndarray) -> np.ndarray:
    """Yaw (rotation about +z) of (..., 3, 3) frames, from their x axis."""
    return np.arctan2(mat[..., 1, 0], mat[..., 0, 0])
