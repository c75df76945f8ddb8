"""Sensitivity on synthetic designs whose answers are known by hand."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.stats import (
    level_differences,
    main_effects,
    newcombe_interval,
    rank_factors,
    sensitivity_summary,
    variance_shares,
)
from metasim.stats.sensitivity import (
    bootstrap_difference_interval,
    cell_means,
    records_to_arrays,
)


@pytest.mark.parametrize(
    "k1,n1,k2,n2,lo,hi",
    [
        # Newcombe (1998), Table II, method 10 (hybrid score), to the printed 4 decimals.
        (56, 70, 48, 80, 0.0524, 0.3339),
        (9, 10, 3, 10, 0.1705, 0.8090),
        (6, 7, 2, 7, 0.0582, 0.8062),
        (5, 56, 0, 29, -0.0381, 0.1926),
        (0, 10, 0, 20, -0.1611, 0.2775),
        (10, 10, 0, 20, 0.6791, 1.0000),
    ],
)
def test_newcombe_interval_matches_the_paper(k1, n1, k2, n2, lo, hi):
    got = newcombe_interval(k1, n1, k2, n2)
    assert got == pytest.approx((lo, hi), abs=6e-5)


def _cells(spec: list[tuple[dict, int, int]]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Episodes from (levels, successes, episodes) per cell."""
    levels: dict[str, list] = {}
    success: list[bool] = []
    for cell, k, n in spec:
        for f, v in cell.items():
            levels.setdefault(f, []).extend([v] * n)
        success.extend([True] * k + [False] * (n - k))
    return {f: np.asarray(v) for f, v in levels.items()}, np.asarray(success)


NOMINAL = {"light": "normal", "friction": 1.0}


def _one_at_a_time():
    # Nominal 18/20; light dim 10/20, bright 17/20; friction 0.5 -> 5/20, 2.0 -> 18/20.
    return _cells(
        [
            ({"light": "normal", "friction": 1.0}, 18, 20),
            ({"light": "dim", "friction": 1.0}, 10, 20),
            ({"light": "bright", "friction": 1.0}, 17, 20),
            ({"light": "normal", "friction": 0.5}, 5, 20),
            ({"light": "normal", "friction": 2.0}, 18, 20),
        ]
    )


def test_level_differences_one_factor_at_a_time():
    levels, ok = _one_at_a_time()
    diffs = {(d.factor, d.level): d for d in level_differences(levels, ok, NOMINAL)}
    assert len(diffs) == 6  # three levels per factor, nominal included
    dim = diffs[("light", "dim")]
    assert (dim.k, dim.n, dim.nominal_k, dim.nominal_n) == (10, 20, 18, 20)
    assert dim.difference == pytest.approx(0.5 - 0.9)
    assert (dim.low, dim.high) == newcombe_interval(10, 20, 18, 20)
    assert dim.high < 0  # a clear drop
    low_mu = diffs[("friction", 0.5)]
    assert low_mu.difference == pytest.approx(0.25 - 0.9)
    assert diffs[("friction", 1.0)].difference == 0.0
    bright = diffs[("light", "bright")]
    assert bright.low < 0 < bright.high  # -0.05 is within noise


def test_marginal_baseline_mixes_in_other_factors_on_one_at_a_time_designs():
    levels, ok = _one_at_a_time()
    diffs = {
        (d.factor, d.level): d for d in level_differences(levels, ok, NOMINAL, baseline="marginal")
    }
    # Marginally, light=normal pools nominal and both friction cells: (18 + 5 + 18) / 60.
    assert diffs[("light", "dim")].nominal_k == 41
    assert diffs[("light", "dim")].nominal_n == 60


def test_bootstrap_difference_interval():
    lo, hi = bootstrap_difference_interval(10, 20, 18, 20, reps=20_000, seed=0)
    nlo, nhi = newcombe_interval(10, 20, 18, 20)
    assert lo < -0.4 < hi < 0
    assert lo == pytest.approx(nlo, abs=0.06) and hi == pytest.approx(nhi, abs=0.06)
    levels, ok = _one_at_a_time()
    diffs = level_differences(levels, ok, NOMINAL, method="bootstrap", reps=500)
    assert all(d.low <= d.difference <= d.high for d in diffs)
    assert bootstrap_difference_interval(0, 0, 3, 5) == (-1.0, 1.0)


def test_rank_factors_worst_drop_first():
    levels, ok = _one_at_a_time()
    ranked = rank_factors(level_differences(levels, ok, NOMINAL))
    assert [e.factor for e in ranked] == ["friction", "light"]
    assert ranked[0].worst_level == 0.5
    assert ranked[0].effect == pytest.approx(-0.65)
    assert ranked[1].worst_level == "dim"


def test_sensitivity_summary_for_summary_json():
    levels, ok = _one_at_a_time()
    out = sensitivity_summary(levels, ok, NOMINAL)
    assert list(out) == ["friction", "light"]
    assert out["friction"]["worst_level"] == "0.5"
    assert out["friction"]["levels"]["2.0"]["rate"] == pytest.approx(0.9)
    assert out["light"]["low"] < out["light"]["effect"] < out["light"]["high"]


def _factorial(table: np.ndarray, n: int = 10) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """A full factorial over a table of cell success rates (multiples of 1 / n)."""
    spec = []
    for idx in np.ndindex(table.shape):
        cell = {f"f{i}": int(v) for i, v in enumerate(idx)}
        spec.append((cell, round(table[idx] * n), n))
    return _cells(spec)


def test_main_effects_on_a_balanced_factorial():
    levels, ok = _factorial(np.array([[0.1, 0.3], [0.5, 0.9]]))
    eff = main_effects(levels, ok)
    # Grand mean 0.45; rows 0.2 and 0.7; columns 0.3 and 0.6.
    assert eff["f0"] == pytest.approx({0: -0.25, 1: 0.25})
    assert eff["f1"] == pytest.approx({0: -0.15, 1: 0.15})


def test_variance_shares_additive_response():
    a = np.array([0.0, 0.4])  # variance 0.04
    b = np.array([0.0, 0.3, 0.6])  # variance 0.06
    levels, ok = _factorial(a[:, None] + b[None, :])
    shares = variance_shares(levels, ok)
    assert shares.variance == pytest.approx(0.10)
    assert shares.first_order == pytest.approx({"f0": 0.4, "f1": 0.6})
    assert shares.total_order == pytest.approx({"f0": 0.4, "f1": 0.6})
    assert shares.interaction == pytest.approx(0.0, abs=1e-12)


def test_variance_shares_pure_interaction():
    levels, ok = _factorial(np.array([[0.0, 1.0], [1.0, 0.0]]))
    shares = variance_shares(levels, ok)
    assert shares.first_order == pytest.approx({"f0": 0.0, "f1": 0.0})
    assert shares.total_order == pytest.approx({"f0": 1.0, "f1": 1.0})
    assert shares.interaction == pytest.approx(1.0)
    assert shares.noise_variance == 0.0  # every cell is all-or-nothing


def test_variance_shares_mixed_by_hand():
    levels, ok = _factorial(np.array([[0.1, 0.3], [0.5, 0.9]]))
    shares = variance_shares(levels, ok)
    # Grand mean 0.45, deviations -0.35, -0.15, 0.05, 0.45: Var(Y) = 0.35 / 4 = 0.0875.
    # Row means 0.2, 0.7: variance 0.0625; column means 0.3, 0.6: variance 0.0225.
    # Interaction residuals are all ±0.05: variance 0.0025 (= 0.0875 - 0.0625 - 0.0225).
    assert shares.variance == pytest.approx(0.0875)
    assert shares.first_order["f0"] == pytest.approx(0.0625 / 0.0875)
    assert shares.total_order["f0"] == pytest.approx(0.0650 / 0.0875)
    assert shares.first_order["f1"] == pytest.approx(0.0225 / 0.0875)
    assert shares.total_order["f1"] == pytest.approx(0.0250 / 0.0875)
    expected_noise = np.mean([p * (1 - p) / 9 for p in (0.1, 0.3, 0.5, 0.9)])
    assert shares.noise_variance == pytest.approx(expected_noise)


def test_three_factor_grid_with_an_inert_factor():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 10, size=(3, 1, 1)) / 10
    table = np.broadcast_to(a, (3, 2, 4)).copy()  # only f0 matters
    levels, ok = _factorial(table)
    shares = variance_shares(levels, ok)
    assert shares.first_order == pytest.approx({"f0": 1.0, "f1": 0.0, "f2": 0.0})
    assert shares.total_order == pytest.approx({"f0": 1.0, "f1": 0.0, "f2": 0.0})


def test_flat_response_and_missing_cells():
    levels, ok = _factorial(np.full((2, 2), 0.5))
    assert variance_shares(levels, ok).first_order == {"f0": 0.0, "f1": 0.0}
    levels, ok = _one_at_a_time()
    with pytest.raises(ValueError, match="not a full factorial"):
        cell_means(levels, ok)


def test_records_and_input_checks():
    records = [
        {"light": "dim", "friction": 1.0, "success": True},
        {"light": "normal", "friction": 1.0, "success": False},
    ]
    levels, ok = records_to_arrays(records, ["light", "friction"])
    assert list(levels["light"]) == ["dim", "normal"]
    assert ok.tolist() == [True, False]
    with pytest.raises(ValueError, match="nominal"):
        level_differences(levels, ok, {"light": "normal"})
    with pytest.raises(ValueError, match="entries"):
        level_differences({"light": np.array(["a"])}, ok, {"light": "a"})
