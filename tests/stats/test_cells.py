from __future__ import annotations

import math

import pytest

from metasim.stats import success_interval
from metasim.stats.cells import cell_summary, summarize_cells


def test_cell_summary_by_hand():
    s = cell_summary(
        [True, False, True, True], progress=[1.0, 0.5, 1.0, 1.0], steps=[10, 99, 20, 60]
    )
    assert (s.k, s.n, s.rate) == (3, 4, 0.75)
    assert (s.low, s.high) == success_interval(3, 4)
    assert s.progress == pytest.approx(0.875)
    assert s.steps_to_success_mean == pytest.approx(30.0)  # failures' steps are ignored
    assert s.steps_to_success_median == 20.0


def test_cell_summary_without_successes_or_extras():
    s = cell_summary([False, False], steps=[5, 6], method="beta")
    assert (s.k, s.n) == (0, 2)
    assert (s.low, s.high) == success_interval(0, 2, method="beta")
    assert math.isnan(s.progress) and math.isnan(s.steps_to_success_mean)
    d = s.to_dict()
    assert d["progress"] is None and d["k"] == 0
    empty = cell_summary([])
    assert (empty.n, empty.low, empty.high) == (0, 0.0, 1.0)


def test_summarize_cells_groups_by_key():
    keys = [("lift", "dim"), ("lift", "dim"), ("lift", "bright"), ("push", "dim")]
    out = summarize_cells(keys, [True, False, True, False], steps=[3, 4, 5, 6])
    assert list(out) == [("lift", "dim"), ("lift", "bright"), ("push", "dim")]
    assert out[("lift", "dim")].rate == 0.5
    assert out[("lift", "bright")].steps_to_success_median == 5.0
    with pytest.raises(ValueError):
        summarize_cells(["a"], [True, False])
