"""`metasim runs --sql` bounds (issue 47, minor items): one statement per query, DuckDB's
memory held to METASIM_SQL_MEMORY_BYTES (DuckDB's own default is 80% of RAM: a probe
query reached 12.3 GB), episodes of a run whose manifest is damaged left out (they were
counted), and a run whose episodes.parquet is a named pipe listed as damaged (it was
listed complete). Over copies of one real run."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.evaluate.config import compose
from metasim.evaluate.runner import run_eval
from metasim.index.query import MEMORY, MIN_MEMORY, memory_limit
from tests.cli_refusal import refused


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs `good`, `bad_manifest` (truncated manifest) and `pipe` (episodes.parquet a
    FIFO), copies of one lift_cube run."""
    base = tmp_path_factory.mktemp("runs")
    run_eval(
        compose(["suite.tasks=[lift_cube]", "num_envs=1", "episodes=1", f"out={base / 'good'}"])
    )
    shutil.copytree(base / "good", base / "bad_manifest")
    (base / "bad_manifest" / "manifest.json").write_text('{"config": {"suite"')
    shutil.copytree(base / "good", base / "pipe")
    (base / "pipe" / "episodes.parquet").unlink()
    os.mkfifo(base / "pipe" / "episodes.parquet")
    return base


def _sql(capsys: pytest.CaptureFixture[str], root: Path, query: str) -> tuple[list[dict], str]:
    assert main(["runs", str(root), "--sql", query]) == 0
    out = capsys.readouterr()
    return list(csv.DictReader(io.StringIO(out.out))), out.err


def test_episodes_of_a_run_with_a_damaged_manifest_are_left_out(root: Path, capsys) -> None:
    rows, err = _sql(capsys, root, "select run, count(*) as n from episodes group by run")
    assert rows == [{"run": "good", "n": "1"}]
    assert f"{root / 'bad_manifest'}: damaged: manifest.json: cannot be read" in err
    assert "its episodes are left out of the episodes view" in err


def test_a_pipe_for_episodes_parquet_is_listed_damaged_not_complete(root: Path, capsys) -> None:
    assert main(["runs", str(root), "--json"]) == 0
    out = capsys.readouterr()
    status = {r["run"]: r["status"] for r in json.loads(out.out)}
    assert status["good"] == "complete"
    assert (
        status["pipe"]
        == "damaged: episodes.parquet: not a regular file (a pipe, a device or a folder)"
    )


@pytest.mark.parametrize("query", ["select 1; select 2", "select 1; drop view runs", ""])
def test_a_query_is_exactly_one_statement(root: Path, capsys, query: str) -> None:
    err = refused(capsys, ["runs", str(root / "good"), "--sql", query])
    n = 0 if not query else 2
    assert f"error: --sql: expected exactly one SQL statement, got {n}" in err, err


def test_duckdb_memory_is_bounded_by_a_metasim_setting(
    root: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Default: a quarter of this machine's memory (at least 256 MiB), as DuckDB reports
    it; a query past a small limit is refused naming the setting."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert memory_limit() == max(MIN_MEMORY, total // 4)
    monkeypatch.setenv(MEMORY, str(300 << 20))
    rows, _ = _sql(capsys, root / "good", "select current_setting('memory_limit') as m")
    assert rows == [{"m": "300.0 MiB"}]
    monkeypatch.setenv(MEMORY, str(20 << 20))
    big = "select range r, repeat('x', 100) s from range(5000000) order by s desc, r"
    err = refused(capsys, ["runs", str(root / "good"), "--sql", f"select count(*) from ({big})"])
    assert f"the query needs more than {20 << 20} bytes ({MEMORY})" in err, err
