"""An episode table holding one (task, cell, episode) in two rows (issue 47, finding 6:
a duplicated episode 0 with its success flipped was counted, and paired with either
copy) is refused by the one reader of episode tables (`run_files.read_episode_table`)
whichever verb reads it: report and compare exit 2 naming the file and the first
duplicated key; `runs --sql` leaves that run out of the episodes view and says so (one
damaged run among many does not stop a query over all of them), and `runs` lists it as
damaged. Tiny run folders written here with pyarrow; no eval runs."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metasim.cli.main import main
from metasim.evaluate.run_files import duplicate_key
from tests.cli_refusal import refused

CONFIG = {"seed": 0, "suite": {"name": "tiny", "tasks": ["t"]}, "policy": {"kind": "noop"}}
KEY = "('t', 'nominal', 0)"


def make_run(folder: Path, successes: list[bool], episodes: list[int] | None = None) -> Path:
    """A run folder of task `t`: manifest, summary and episodes.parquet, one row per
    entry of `successes` (episode numbers `episodes`, else 0, 1, ...)."""
    folder.mkdir(parents=True)
    n, k = len(successes), sum(successes)
    task = {"success_rate": k / n, "n": n, "successes": k}
    (folder / "manifest.json").write_text(json.dumps({"config": CONFIG}))
    (folder / "summary.json").write_text(json.dumps({"tasks": {"t": task}, "config": CONFIG}))
    eps = episodes if episodes is not None else list(range(n))
    table = pa.table(
        {
            "task": ["t"] * n,
            "cell": ["nominal"] * n,
            "episode": pa.array(eps, pa.int64()),
            "seed": pa.array([1000 + e for e in eps], pa.int64()),
            "success": successes,
        }
    )
    pq.write_table(table, folder / "episodes.parquet")
    return folder


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """A good run `good` and a run `dup` whose episode 0 is in two rows (success flipped)."""
    good = make_run(tmp_path / "runs" / "good", [True, False, True])
    dup = make_run(tmp_path / "runs" / "dup", [True, False, True, False], [0, 1, 2, 0])
    return good, dup


def test_duplicate_key_finds_the_first_repeated_key() -> None:
    rows = {"task": ["a", "a", "b", "a"], "episode": [0, 1, 0, 1]}
    assert duplicate_key(pa.table(rows)) == ("a", "nominal", 1)
    assert duplicate_key(pa.table({**rows, "cell": ["x", "y", None, "x"]})) is None
    nominal = {"task": ["a", "a"], "episode": [0, 0], "cell": [None, "nominal"]}
    assert duplicate_key(pa.table(nominal)) == ("a", "nominal", 0)  # no cell: nominal


READERS = {
    "report": ["report", "{dup}", "--videos", "0", "--out", "{tmp}/page.html"],
    "compare": ["compare", "{good}", "{dup}"],
    "compare (first)": ["compare", "{dup}", "{good}", "--json"],
}


@pytest.mark.parametrize("argv", list(READERS.values()), ids=list(READERS))
def test_report_and_compare_refuse_a_duplicated_episode(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    good, dup = runs
    err = refused(capsys, [a.format(good=good, dup=dup, tmp=tmp_path) for a in argv])
    assert err.startswith(f"error: {dup / 'episodes.parquet'}: ")
    assert KEY in err and "more than one row" in err
    assert not (tmp_path / "page.html").exists()


def test_runs_sql_leaves_the_damaged_run_out_and_warns(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    good, dup = runs
    sql = "SELECT run, count(*) AS n, sum(success::INT) AS k FROM episodes GROUP BY run"
    assert main(["runs", str(good.parent), "--sql", sql]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines() == ["run,n,k", "good,3,2"]
    (warning,) = out.err.splitlines()
    assert warning.startswith(f"warning: {dup}: damaged: episodes.parquet: refused")
    assert KEY in warning and "left out of the episodes view" in warning
    assert main(["runs", str(good.parent), "--sql", "SELECT run, status FROM runs"]) == 0
    status = dict(list(csv.reader(io.StringIO(capsys.readouterr().out)))[1:])
    assert status["dup"].startswith("damaged: episodes.parquet: refused") and KEY in status["dup"]
    assert not status["good"].startswith("damaged")


def test_runs_listing_marks_the_run_damaged(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    good, dup = runs
    assert main(["runs", str(good.parent), "--json"]) == 0
    out = capsys.readouterr()
    rows = {r["run"]: r for r in json.loads(out.out)}
    assert rows["dup"]["status"].startswith("damaged") and rows["dup"]["episodes_done"] is None
    assert rows["good"]["episodes_done"] == 3
    assert f"warning: {dup}: damaged: episodes.parquet: refused" in out.err and KEY in out.err


def test_tables_without_duplicates_are_read(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, _ = runs
    other = make_run(tmp_path / "other", [False, False, True])
    assert main(["compare", str(good), str(other), "--json", "--reps", "50"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["pooled"]["a"]["n"] == 3 and result["pooled"]["b"]["n"] == 3
    assert not result["warnings"]


def test_compare_a_run_with_itself_warns(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    good, _ = runs
    assert main(["compare", str(good), str(good.parent / "." / "good"), "--reps", "50"]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "is run 1 again (the same folder" in err
