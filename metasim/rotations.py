"""Rotation helpers on numpy arrays, batched over a leading axis where noted.

Quaternions are MuJoCo's (w, x, y, z). Shapes are written as (B, 4), (B, 3, 3).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class RowWeights:
    """A constant weight table for `rows_times` with its non-zero rows found once (the
    search costs more than the product for the small tables of the per-step path), and
    those rows' weights (`w_rows`) and, for a vector, whether they are all +-1 (`unit`)."""

    __slots__ = ("rows", "unit", "w", "w_rows")

    def __init__(self, w: np.ndarray) -> None:
        self.w = np.array(w, dtype=np.float64)
        self.w.setflags(write=False)
        self.rows: list[int] = np.flatnonzero(
            np.any(self.w.reshape(self.w.shape[0], -1), axis=1)
        ).tolist()
        self.w_rows = self.w[self.rows]
        self.unit = self.w.ndim == 1 and bool(np.all(np.abs(self.w_rows) == 1.0))


def rows_times(a: np.ndarray, w: np.ndarray | RowWeights) -> np.ndarray:
    """`a @ w` for a batch `a` (..., K) and a constant `w` (K, N) or (K,), with every
    row's sums taken in one fixed order (k = 0, 1, ..., K - 1; zero rows of `w` skipped).

    BLAS picks its kernel by the batch's size, so `a @ w` can differ in the last bit
    between a row on its own and the same row inside a batch; an expert's actions would
    then depend on `num_envs` and on which episodes share a batch. Elementwise products
    and sums round the same whatever the batch. A `RowWeights` table skips the search
    for its non-zero rows (the same rows, the same bits).

    A table of 4 or more columns takes all products at once and sums them along the
    rows with `np.add.reduce` started from -0.0: numpy adds whole rows of the (..., r, N)
    products in order (the columns are the contiguous inner loop), and -0.0 + x is x, so
    the sums and their signed zeros are the row-by-row loop's (tests/test_rotations.py)."""
    a = np.asarray(a, dtype=np.float64)
    if not isinstance(w, RowWeights):
        w = RowWeights(w)
    rows, table = w.rows, w.w
    if table.ndim == 2 and table.shape[1] >= 4 and len(rows) > 1:
        return np.asarray(np.add.reduce(a[..., rows, None] * w.w_rows, axis=-2, initial=-0.0))
    if table.ndim == 1:
        out = a[..., rows[0]] * table[rows[0]]
        if w.unit:  # +-1 weights: x * 1 is x and y + (-1) x is y - x, exactly
            for k in rows[1:]:
                (np.add if table[k] > 0 else np.subtract)(out, a[..., k], out=out)
            return np.asarray(out)
        term = np.empty_like(out)
        for k in rows[1:]:
            np.multiply(a[..., k], table[k], out=term)
            out += term
    else:
        out = a[..., rows[0], None] * table[rows[0]]
        term = np.empty_like(out)
        for k in rows[1:]:
            np.multiply(a[..., k, None], table[k], out=term)
            out += term
    return np.asarray(out)


def yaw_quat(yaw: float) -> np.ndarray:
    """Rotation by `yaw` about +z, shape (4,)."""
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])


def _mat_to_quat_table() -> tuple[np.ndarray, np.ndarray]:
    """(9, 16) weights and (16,) offsets: a row-major matrix's 9 entries -> the 4x4 table
    of 4 q_k q (row k pivots on component k, Shepperd's method)."""
    w = np.zeros((9, 4, 4))
    off = np.zeros((4, 4))
    # (row, column) of each table entry as +/- sums of matrix entries (index 3 r + c)
    terms = {
        (0, 0): (1, [(0, 1), (4, 1), (8, 1)]),
        (0, 1): (0, [(7, 1), (5, -1)]),
        (0, 2): (0, [(2, 1), (6, -1)]),
        (0, 3): (0, [(3, 1), (1, -1)]),
        (1, 1): (1, [(0, 1), (4, -1), (8, -1)]),
        (1, 2): (0, [(1, 1), (3, 1)]),
        (1, 3): (0, [(2, 1), (6, 1)]),
        (2, 2): (1, [(0, -1), (4, 1), (8, -1)]),
        (2, 3): (0, [(5, 1), (7, 1)]),
        (3, 3): (1, [(0, -1), (4, -1), (8, 1)]),
    }
    for (r, c), (const, parts) in terms.items():
        for rc in {(r, c), (c, r)}:
            off[rc] = const
            for k, sign in parts:
                w[k][rc] = sign
    return w.reshape(9, 16), off.reshape(16)


_m2q_w, _M2Q_OFF = _mat_to_quat_table()
_M2Q_W = RowWeights(_m2q_w)
_DIAG = np.array([0, 5, 10, 15])  # the table's diagonal in its flat (16,) rows
_ROW4 = 4 * np.arange(1024)  # first flat row of each matrix's 4x4 table
# (16, 9) weights: the outer product q q^T (row-major) -> a rotation matrix's 9 entries
# (plus the identity), for a unit quaternion (w, x, y, z).
_q2m = np.zeros((4, 4, 9))
for _k, _parts in enumerate(
    [
        [((2, 2), -2), ((3, 3), -2)],
        [((1, 2), 2), ((0, 3), -2)],
        [((1, 3), 2), ((0, 2), 2)],
        [((1, 2), 2), ((0, 3), 2)],
        [((1, 1), -2), ((3, 3), -2)],
        [((2, 3), 2), ((0, 1), -2)],
        [((1, 3), 2), ((0, 2), -2)],
        [((2, 3), 2), ((0, 1), 2)],
        [((1, 1), -2), ((2, 2), -2)],
    ]
):
    for (_i, _j), _v in _parts:
        _q2m[_i, _j, _k] = _v
_Q2M_W = RowWeights(_q2m.reshape(16, 9))
_EYE9 = np.eye(3).reshape(9)
_WZYX = np.array([3, 2, 1, 0])
# (16, 4): a_i b_j (flat index 4 i + j) -> the Hamilton product's (w, x, y, z)
_qmul = np.zeros((4, 4, 4))
for _out, _terms in enumerate(
    [
        [(0, 0, 1), (1, 1, -1), (2, 2, -1), (3, 3, -1)],
        [(0, 1, 1), (1, 0, 1), (2, 3, 1), (3, 2, -1)],
        [(0, 2, 1), (1, 3, -1), (2, 0, 1), (3, 1, 1)],
        [(0, 3, 1), (1, 2, 1), (2, 1, -1), (3, 0, 1)],
    ]
):
    for _i, _j, _v in _terms:
        _qmul[_i, _j, _out] = _v
_QMUL = RowWeights(_qmul.reshape(16, 4))
_ONES4 = RowWeights(np.ones(4))
_YAW_DEN = RowWeights(np.array([1.0, 1.0, -1.0, -1.0]))


def mat_to_quat(mat: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices to (..., 4) unit quaternions with w >= 0.

    Shepperd's method: for each matrix, pivot on the largest of (w, x, y, z). The 4x4
    table of candidates is one product with a constant table (`rows_times`: a few numpy
    calls whatever the batch, and the same bits for a row alone or in a batch).
    """
    m = np.asarray(mat, dtype=np.float64)
    lead = m.shape[:-2]
    cands = rows_times(m.reshape(-1, 9), _M2Q_W)
    cands += _M2Q_OFF
    b = cands.shape[0]
    pivot = cands[:, _DIAG].argmax(axis=1)  # row of the table to take, per matrix
    rows = _ROW4[:b] if b <= len(_ROW4) else 4 * np.arange(b)
    q = cands.reshape(4 * b, 4)[pivot + rows]
    q /= np.sqrt(np.add.reduce(q * q, axis=1))[:, None]
    q *= np.where(q[:, :1] < 0, -1.0, 1.0)
    return q.reshape(*lead, 4)


def quat_to_mat(q: np.ndarray) -> np.ndarray:
    """(..., 4) quaternions to (..., 3, 3) rotation matrices (normalized first)."""
    q = np.asarray(q, dtype=np.float64)
    lead = q.shape[:-1]
    flat = q.reshape(-1, 4)
    outer = (flat[:, :, None] * flat[:, None, :]).reshape(-1, 16)
    outer /= outer[:, (0, 5, 10, 15)].sum(axis=1, keepdims=True)  # |q|^2
    return (rows_times(outer, _Q2M_W) + _EYE9).reshape(*lead, 3, 3)


def quat_yaw(q: np.ndarray) -> np.ndarray:
    """(..., 4) quaternions (any norm) to the (...,) yaw of their frames' x axis:
    `yaw_of(quat_to_mat(q))` without building the matrices."""
    q = np.asarray(q, dtype=np.float64)
    # 2 (x y + w z) = q . (z, y, x, w) and w^2 + x^2 - y^2 - z^2: a few calls whatever
    # the batch (this runs every control step), each row summed alone (`rows_times`)
    return np.arctan2(rows_times(q * q[..., _WZYX], _ONES4), rows_times(q * q, _YAW_DEN))


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product, (..., 4) x (..., 4): the outer product a b^T (flat) times a
    (16, 4) table of signs (a few calls whatever the batch; `rows_times`)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    outer = a[..., :, None] * b[..., None, :]
    return rows_times(outer.reshape(*outer.shape[:-2], 16), _QMUL)


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
