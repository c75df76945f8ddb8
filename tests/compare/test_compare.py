"""`metasim compare` on real short evaluations (tests/compare/conftest.py): the JSON
schema, paired intervals narrower than unpaired ones on the same data, McNemar against
the binomial test of the discordant episodes read back from the parquet files, three
runs, the unpaired fallback and the refusals (exit 2, one paragraph naming the field)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from scipy import stats

from metasim.cli.main import main
from metasim.compare import compare_runs
from metasim.evaluate.config import compose
from metasim.evaluate.runner import run_eval
from tests.compare.conftest import TASKS

# The module evaluates its runs once (~50 s here): the slow lane.
pytestmark = pytest.mark.slow

ENTRY_KEYS = {"a", "b", "diff", "diff_ci95", "mcnemar_p", "paired"}


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["compare", *args, "--json", "--reps", "500"]) == 0
    return json.loads(capsys.readouterr().out)


def parquet_pairs(a: Path, b: Path) -> list[tuple[str, bool, bool]]:
    """(task, success in A, success in B) of every episode pair, joined by DuckDB."""
    sql = f"""
        SELECT x.task, x.success, y.success
        FROM '{a / "episodes.parquet"}' x JOIN '{b / "episodes.parquet"}' y
        USING (task, cell, episode, seed) ORDER BY ALL"""
    return [(str(t), bool(s), bool(u)) for t, s, u in duckdb.sql(sql).fetchall()]


def test_json_has_the_schema_of_the_issue(runs, capsys) -> None:
    out = cli_json(capsys, str(runs["expert"]), str(runs["jitter10"]))
    assert list(out["tasks"]) == TASKS
    for entry in [*out["tasks"].values(), out["pooled"]]:
        assert ENTRY_KEYS <= set(entry)
        assert entry["paired"] is True
        lo, hi = entry["diff_ci95"]
        assert -1 <= lo <= entry["diff"] <= hi <= 1
        assert entry["diff"] == pytest.approx(entry["b"]["rate"] - entry["a"]["rate"])
        for side in ("a", "b"):
            assert set(entry[side]) == {"successes", "n", "rate", "ci95"}
    agg = out["aggregate"]
    assert {"a", "b", "iqm_diff", "probability_of_improvement", "method"} <= set(agg)
    assert {"iqm", "optimality_gap"} <= set(agg["a"])
    assert out["warnings"] == [] and "comparisons" not in out


def test_counts_and_mcnemar_match_the_parquet_pairs(runs) -> None:
    """Per task and pooled: k/n of each run and the discordant split from an independent
    DuckDB join of the two parquet files; McNemar p = scipy's exact binomial test."""
    out = compare_runs([runs["expert"], runs["jitter10"]], reps=200)
    pairs = parquet_pairs(runs["expert"], runs["jitter10"])
    assert len(pairs) == 3 * 3 * 6
    for task, entry in [*out["tasks"].items(), ("pooled", out["pooled"])]:
        rows = [p for p in pairs if task in (p[0], "pooled")]
        a_only = sum(x and not y for _, x, y in rows)
        b_only = sum(y and not x for _, x, y in rows)
        assert entry["a"]["successes"] == sum(x for _, x, _ in rows)
        assert entry["b"]["successes"] == sum(y for _, _, y in rows)
        assert entry["a"]["n"] == entry["b"]["n"] == len(rows)
        assert entry["discordant"] == {"a_only": a_only, "b_only": b_only}
        expected = stats.binomtest(a_only, a_only + b_only).pvalue if a_only + b_only else 1.0
        assert entry["mcnemar_p"] == pytest.approx(expected, abs=1e-12)
    listed = out["discordant"]
    assert len(listed) == sum(x != y for _, x, y in pairs)
    assert all(d["a"] != d["b"] for d in listed)


def test_paired_interval_is_narrower_than_unpaired_on_the_same_data(runs) -> None:
    """The jittered expert fails where the expert does (same states, same env noise), so
    the runs agree beyond chance and the paired interval is the narrower."""
    out = compare_runs([runs["expert"], runs["jitter10"]], reps=200)
    pooled = out["pooled"]
    paired = pooled["diff_ci95"][1] - pooled["diff_ci95"][0]
    unpaired = pooled["unpaired_ci95"][1] - pooled["unpaired_ci95"][0]
    assert paired < 0.95 * unpaired, (paired, unpaired)
    assert pooled["diff"] < 0  # more jitter, fewer successes


def test_three_runs_compare_every_pair(runs, capsys) -> None:
    paths = [str(runs[n]) for n in ("expert", "jitter10", "jitter5")]
    out = cli_json(capsys, *paths)
    pairs = [(c["runs"]["a"]["path"], c["runs"]["b"]["path"]) for c in out["comparisons"]]
    assert pairs == [(paths[0], paths[1]), (paths[0], paths[2]), (paths[1], paths[2])]
    assert out["tasks"] == out["comparisons"][0]["tasks"]
    # The difference B - A of (jitter5 - jitter10) is (jitter5 - expert) - (jitter10 - expert).
    d = {pair: c["pooled"]["diff"] for pair, c in zip(pairs, out["comparisons"], strict=True)}
    assert d[(paths[1], paths[2])] == pytest.approx(
        d[(paths[0], paths[2])] - d[(paths[0], paths[1])]
    )


def test_table_output_names_both_runs_and_the_pooled_row(runs, capsys) -> None:
    assert main(["compare", str(runs["expert"]), str(runs["jitter10"]), "--reps", "200"]) == 0
    text = capsys.readouterr().out
    assert "pooled" in text and "McNemar" in text and "paired" in text
    assert "jitter10" in text and "expert" in text and "Discordant episodes" in text


def test_different_seed_is_refused_then_compared_unpaired(runs, capsys) -> None:
    a, b = str(runs["expert"]), str(runs["seed4"])
    assert main(["compare", a, b]) == 2
    err = capsys.readouterr().err
    assert "config.seed" in err and "--unpaired" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert main(["compare", a, b, "--unpaired", "--json", "--reps", "200"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "UNPAIRED" in captured.err  # the warning, said plainly
    assert out["pooled"]["paired"] is False and out["pooled"]["mcnemar_p"] is None
    assert all(e["paired"] is False for e in out["tasks"].values())
    assert out["discordant"] == [] and "UNPAIRED" in out["method"]


@pytest.mark.parametrize("flags", [[], ["--unpaired"]])
def test_another_suite_and_grid_are_refused(runs, capsys, flags: list[str]) -> None:
    assert main(["compare", str(runs["expert"]), str(runs["other_suite"]), *flags]) == 2
    err = capsys.readouterr().err
    assert "config.suite.tasks" in err and "config.perturbation" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_missing_run_folder_and_one_run_are_refused(runs, capsys, tmp_path: Path) -> None:
    assert main(["compare", str(runs["expert"]), str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["compare", str(runs["expert"])]) == 2
    assert "two run folders" in capsys.readouterr().err


def test_plot_and_html_are_written(runs, tmp_path: Path, capsys) -> None:
    png, page = tmp_path / "profile.png", tmp_path / "cmp.html"
    args = [str(runs["expert"]), str(runs["jitter10"]), "--reps", "200"]
    assert main(["compare", *args, "--plot", str(png), "--html", str(page), "--videos", "1"]) == 0
    assert png.read_bytes().startswith(b"\x89PNG")
    html = page.read_text()
    assert "Paired comparison" in html and "Discordant episodes" in html
    assert html.count("<video") == 2  # one discordant episode, filmed in both runs
    assert "replay DIFFERS" not in html and "replay failed" not in html


def test_report_compare_carries_the_paired_section(runs, tmp_path: Path) -> None:
    from metasim.report import build_report

    page = build_report(runs["expert"], runs["jitter10"], tmp_path / "r.html", videos=0)
    html = page.read_text()
    assert "Paired comparison" in html and "McNemar" in html and "Discordant episodes" in html
    other = build_report(runs["expert"], runs["other_suite"], tmp_path / "o.html", videos=0)
    text = other.read_text()
    assert "Difference between the runs" in text and "config.suite.tasks differ" in text


def test_runs_of_a_task_source_pair_by_scene_name(tmp_path: Path, capsys) -> None:
    """A suite of task references (`libero:libero_object/2`) records its episodes under
    the scene's name (`libero_object_2`): the runs still pair, episode by episode (they
    matched nowhere before, and compare refused them)."""
    pytest.importorskip("libero", reason="the libero extra is not installed")
    common = ["suite=libero_object", "suite.tasks=[libero:libero_object/2]"]
    common += ["policy=libero_expert", "episodes=2", "num_envs=2", "seed=0"]
    for name in ("a", "b"):
        run_eval(compose([*common, f"out={tmp_path / name}"]))
    out = cli_json(capsys, str(tmp_path / "a"), str(tmp_path / "b"))
    entry = out["tasks"]["libero_object_2"]
    assert entry["paired"] is True and entry["a"]["n"] == entry["b"]["n"] == 2
