"""The batched rotation helpers against MuJoCo's own (mju_*) on random rotations."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from metasim import rotations
from metasim.rotations import (
    RowWeights,
    mat_to_quat,
    quat_mul,
    quat_to_mat,
    quat_yaw,
    rows_times,
)


def _unit_quats(n: int, seed: int) -> np.ndarray:
    q = np.random.default_rng(seed).normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _mju_mat(q: np.ndarray) -> np.ndarray:
    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, q)
    return out.reshape(3, 3)


@pytest.mark.parametrize("shape", [(), (1,), (7,), (2, 3)])
def test_mat_to_quat_matches_mujoco_with_w_nonnegative(shape):
    n = int(np.prod(shape)) if shape else 1
    quats = _unit_quats(n, 0)
    mats = np.stack([_mju_mat(q) for q in quats]).reshape(*shape, 3, 3)
    got = mat_to_quat(mats)
    assert got.shape == (*shape, 4)
    expect = quats * np.where(quats[:, :1] < 0, -1.0, 1.0)
    np.testing.assert_allclose(got.reshape(n, 4), expect, atol=1e-12)


def test_mat_to_quat_pivots_on_each_component():
    # rotations of ~180 degrees about x, y and z make x, y or z the largest component
    for axis in np.eye(3):
        q = np.concatenate([[0.05], axis])
        q /= np.linalg.norm(q)
        np.testing.assert_allclose(mat_to_quat(_mju_mat(q)), q, atol=1e-12)


def test_quat_to_mat_matches_mujoco():
    quats = _unit_quats(50, 1)
    expect = np.stack([_mju_mat(q) for q in quats])
    np.testing.assert_allclose(quat_to_mat(quats), expect, atol=1e-12)
    np.testing.assert_allclose(quat_to_mat(3.0 * quats[0]), expect[0], atol=1e-12)


def test_quat_mul_matches_mujoco_and_broadcasts():
    a, b = _unit_quats(20, 2), _unit_quats(20, 3)
    expect = np.zeros((20, 4))
    for i in range(20):
        mujoco.mju_mulQuat(expect[i], a[i], b[i])
    np.testing.assert_allclose(quat_mul(a, b), expect, atol=1e-14)
    np.testing.assert_allclose(quat_mul(a[0], b[0]), expect[0], atol=1e-14)
    np.testing.assert_allclose(quat_mul(a, b[0])[5], quat_mul(a[5], b[0]), atol=1e-15)
    assert quat_mul(a[0], b.reshape(4, 5, 4)).shape == (4, 5, 4)


def test_quat_yaw_is_the_heading_of_the_frames_x_axis():
    quats = _unit_quats(30, 4).reshape(5, 6, 4)
    mats = quat_to_mat(quats)
    expect = np.arctan2(mats[..., 1, 0], mats[..., 0, 0])
    np.testing.assert_allclose(quat_yaw(quats), expect, atol=1e-12)
    np.testing.assert_allclose(quat_yaw(2.5 * quats), expect, atol=1e-12)  # any norm


@pytest.mark.parametrize("batch", [2, 3, 5, 17])
def test_a_row_gets_the_same_bits_alone_as_in_a_batch(batch):
    # BLAS's a @ w picks its kernel by the batch size; these helpers run on every control
    # step, so a last-bit difference would make an expert's actions (and a collected
    # dataset) depend on num_envs and on which episodes share a batch
    rng = np.random.default_rng(batch)
    q, p = rng.normal(size=(2, 300, batch, 4))
    for a, b in zip(q, p, strict=True):
        mats = quat_to_mat(a)
        whole = (quat_yaw(a), mats, quat_mul(a, b), mat_to_quat(mats))
        for i in range(batch):
            one = slice(i, i + 1)
            alone = (quat_yaw(a[one]), quat_to_mat(a[one]), quat_mul(a[one], b[one]))
            alone += (mat_to_quat(mats[one]),)
            for x, y in zip(whole, alone, strict=True):
                assert np.array_equal(x[i], y[0])


def test_rows_times_is_the_matrix_product():
    rng = np.random.default_rng(0)
    a, w, v = rng.normal(size=(6, 5)), rng.normal(size=(5, 3)), rng.normal(size=5)
    w[2] = 0.0  # a zero row is skipped, not lost
    np.testing.assert_allclose(rows_times(a, w), a @ w, rtol=1e-12)
    np.testing.assert_allclose(rows_times(a, v), a @ v, rtol=1e-12)
    np.testing.assert_allclose(rows_times(a.reshape(2, 3, 5), w), (a @ w).reshape(2, 3, 3))


def test_row_weights_give_the_same_bits_as_the_table() -> None:
    # the per-step tables are RowWeights (non-zero rows found once); the bits must be
    # those of the same fixed-order sum over the table itself, zero rows skipped
    rng = np.random.default_rng(1)
    w = rng.normal(size=(7, 4))
    w[[1, 4]] = 0.0
    for a in (rng.normal(size=(9, 7)), rng.normal(size=(2, 3, 7)), rng.normal(size=7)):
        want = np.zeros((*a.shape[:-1], 4))
        for k in (0, 2, 3, 5, 6):  # k ascending, the zero rows skipped
            want = want + a[..., k, None] * w[k] if k else a[..., k, None] * w[k]
        for table in (w, RowWeights(w)):
            assert np.array_equal(rows_times(a, table), want)
        assert np.array_equal(rows_times(a, RowWeights(w[:, 0])), rows_times(a, w[:, 0]))
    with pytest.raises(ValueError):
        RowWeights(w).w[0, 0] = 1.0  # read-only: the rows found once stay true


def _row_by_row(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The fixed-order sum, one row of the table at a time (zero rows skipped)."""
    rows = [k for k in range(w.shape[0]) if np.any(w[k])]
    out = a[..., rows[0], None] * w[rows[0]] if w.ndim == 2 else a[..., rows[0]] * w[rows[0]]
    for k in rows[1:]:
        out = out + (a[..., k, None] * w[k] if w.ndim == 2 else a[..., k] * w[k])
    return out


@pytest.mark.parametrize("batch", [1, 2, 17, 63, 64, 200, 1000])
def test_all_products_at_once_keep_the_row_by_row_bits_and_signed_zeros(batch) -> None:
    # the wide tables sum all their products in one np.add.reduce; numpy starts some
    # reductions from +0.0 (here from 63 rows on), which turns a sum of -0.0s into +0.0:
    # the reduce starts from -0.0 instead, and the bits (zeros' signs too) must stay
    rng = np.random.default_rng(batch)
    wide = rng.normal(size=(9, 6))
    wide[[2, 5]] = 0.0
    wide[:, 1] = np.abs(wide[:, 1])  # -0.0 inputs give -0.0 products (and sums) here
    for table in (wide, rotations._Q2M_W.w, rotations._QMUL.w):
        a = rng.normal(size=(batch, table.shape[0])) * rng.choice([1e-3, 1.0, 1e3], table.shape[0])
        a[rng.random(a.shape) < 0.3] = -0.0
        a[rng.random(a.shape) < 0.1] = 0.0
        a[0] = -0.0  # every product of this row a signed zero
        got, want = rows_times(a, RowWeights(table)), _row_by_row(a, table)
        assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
    assert np.signbit(_row_by_row(np.full((1, 9), -0.0), wide)[0, 1])  # (a -0.0 sum, tested)
    for unit in (np.ones(4), np.array([1.0, 1.0, -1.0, -1.0]), np.array([-1.0, 0.0, 1.0, 1.0])):
        a = rng.normal(size=(batch, 4))
        a[rng.random(a.shape) < 0.3] = -0.0
        got, want = rows_times(a, RowWeights(unit)), _row_by_row(a, unit)
        assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
