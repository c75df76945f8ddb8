"""The report's own small computations, checked against hand-worked values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from metasim.evaluate.records import RunSummary
from metasim.report import analysis as an
from metasim.report.data import Episode, Run


def make_run() -> Run:
    """One task, an OFAT grid on two factors; `b=2` fails every episode."""
    cells = {
        "nominal": {"a": 0, "b": 0},
        "c1": {"a": 1, "b": 0},
        "c2": {"a": 0, "b": 2},
    }
    wins = {"nominal": 4, "c1": 3, "c2": 0}
    eps = [
        Episode(
            task="t",
            cell=cid,
            episode=k,
            seed=k,
            success=k < wins[cid],
            progress=1.0,
            steps=10,
            wall_time_s=0.0,
            error=None,
            factors=f,
        )
        for cid, f in cells.items()
        for k in range(4)
    ]
    summary = {
        "tasks": {"t": {"success_rate": 7 / 12, "n": 12, "successes": 7, "ci95": [0.3, 0.8]}},
        "cells": {
            cid: {"factors": f, "tasks": {"t": {"success_rate": wins[cid] / 4, "n": 4}}}
            for cid, f in cells.items()
        },
    }
    return Run(Path("x"), RunSummary.model_validate(summary), eps)


def test_difference_matches_the_hand_value() -> None:
    # Newcombe (1998) example: 56/70 vs 48/80 -> 0.2 with interval [0.0524, 0.3339].
    d, lo, hi = an.difference(56, 70, 48, 80)
    assert d == pytest.approx(0.2)
    assert (lo, hi) == pytest.approx((0.0524, 0.3339), abs=5e-4)


def test_difference_of_an_empty_group_is_unknown() -> None:
    # One edge case for the report and stats/: NaN difference, the whole (-1, 1) interval.
    d, lo, hi = an.difference(3, 4, 0, 0)
    assert np.isnan(d)
    assert (lo, hi) == (-1.0, 1.0)


def test_level_stats_contrast_each_level_with_nominal() -> None:
    run = make_run()
    stats = {(s.factor, s.level): s for s in an.level_stats(run)}
    assert (stats[("a", 0)].k, stats[("a", 0)].n) == (4, 4)  # other factor nominal only
    assert stats[("a", 1)].diff == pytest.approx(-0.25)
    assert stats[("b", 2)].diff == pytest.approx(-1.0)
    ranked = an.ranked_effects(run)
    assert [s.factor for s in ranked] == ["b", "a"]
    assert an.effect_matrix(run, ["a", "b"]).tolist() == [[-0.25], [-1.0]]


def test_profile_and_iqm() -> None:
    scores = np.array([0.0, 0.5, 0.5, 1.0])
    assert an.profile(scores, np.array([0.0, 0.5, 0.99])).tolist() == [0.75, 0.25, 0.25]
    assert an.iqm(np.array([0.0, 0.2, 0.4, 1.0])) == pytest.approx(0.3)
    assert an.profile(np.array([]), np.array([0.5])).tolist() == [0.0]
    assert np.isnan(an.iqm(np.array([])))


def test_report_of_a_bare_summary(tmp_path: Path) -> None:
    """A summary.json with no episodes.parquet and extra keys still gives a report."""
    import json

    from metasim.report import build_report

    summary = {
        "tasks": {
            "t": {
                "success_rate": 0.5,
                "n": 2,
                "successes": 1,
                "ci95": [0.1, 0.9],
                "mean_progress": 0.5,
                "mean_steps": 10,
                "errors": 0,
            }
        },
        "config": {"policy": {"kind": "scripted"}, "seed": 3},
        "aggregate": {"iqm": 0.5},
        "sensitivity": {"f": {"effect": -0.2}},
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    html = build_report(tmp_path, videos=1).read_text()
    assert "Stored summaries" in html and "iqm" in html and "nothing to replay" in html
