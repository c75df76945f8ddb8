"""Sobol indices through SALib on a function whose indices are known in closed form."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("SALib")

from metasim.stats.sobol import saltelli_design, sobol_indices

BOUNDS = {"a": (0.0, 1.0), "b": (0.0, 1.0), "c": (0.0, 1.0)}


def test_indices_of_a_known_function():
    # f = a (1 + c) + 2 b with independent U(0, 1) inputs. Partial variances (in 1/144):
    # V_a = 27, V_b = 48, V_c = 3, V_ac = 1; total 79.
    x = saltelli_design(BOUNDS, 2048, seed=0)
    assert x.shape == (2048 * 5, 3)
    y = x[:, 0] * (1 + x[:, 2]) + 2 * x[:, 1]
    res = sobol_indices(BOUNDS, y, seed=0)
    expected_s1 = {"a": 27 / 79, "b": 48 / 79, "c": 3 / 79}
    expected_st = {"a": 28 / 79, "b": 48 / 79, "c": 4 / 79}
    for name in BOUNDS:
        assert res.first_order[name] == pytest.approx(expected_s1[name], abs=0.03)
        assert res.total_order[name] == pytest.approx(expected_st[name], abs=0.03)
        assert res.first_order_conf[name] > 0


def test_design_respects_bounds():
    x = saltelli_design({"mass": (0.5, 2.0), "fovy": (40.0, 60.0)}, 64)
    assert np.all((x[:, 0] >= 0.5) & (x[:, 0] <= 2.0))
    assert np.all((x[:, 1] >= 40.0) & (x[:, 1] <= 60.0))
