"""The controllers' wrapper-free linear algebra agrees with numpy.linalg, and a singular
matrix takes the pseudo-inverse path of the OSC's inverse."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from metasim.control import linalg
from metasim.control.osc import _inv_psd


def _spd(b: int, k: int, seed: int) -> np.ndarray:
    a = np.random.default_rng(seed).normal(size=(b, k, k))
    return a @ np.swapaxes(a, 1, 2) + 0.1 * np.eye(k)


def test_solve_and_inv_match_numpy():
    a = _spd(5, 6, 0)
    rhs = np.random.default_rng(1).normal(size=(5, 6, 2))
    np.testing.assert_allclose(linalg.solve(a, rhs), np.linalg.solve(a, rhs), atol=1e-12)
    np.testing.assert_allclose(linalg.inv(a), np.linalg.inv(a), atol=1e-12)


def test_scaled_eye_is_cached_and_read_only():
    eye = linalg.scaled_eye(4, 0.25)
    assert eye is linalg.scaled_eye(4, 0.25)
    np.testing.assert_array_equal(eye, 0.25 * np.eye(4))
    with pytest.raises(ValueError):
        eye[0, 0] = 1.0


def test_inv_psd_takes_the_pseudo_inverse_of_a_singular_batch():
    a = _spd(3, 3, 2)
    a[1] = np.diag([2.0, 1.0, 0.0])  # rank 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning escapes under errstate
        with np.errstate(invalid="ignore"):
            out = _inv_psd(a)
    np.testing.assert_allclose(out, np.linalg.pinv(a), atol=1e-12)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(_inv_psd(_spd(2, 3, 3)), np.linalg.inv(_spd(2, 3, 3)), atol=1e-12)
