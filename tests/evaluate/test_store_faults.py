"""Run folders that cannot hold a store, and stores that are damaged: exit 2 with one
paragraph, nothing the user has deleted, and every episode that can be read recovered."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from metasim.cli.main import main

ARGS = ["eval", "--quiet", "suite.tasks=[lift_cube]", "episodes=4", "num_envs=2"]
HEADERS = 3 * 4096  # DuckDB's file headers; data blocks start after them


def keys(path: Path) -> list[tuple[str, str, int]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT task, cell, episode FROM episodes ORDER BY ALL").fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A completed 4-episode run."""
    out = tmp_path_factory.mktemp("store") / "run"
    assert main([*ARGS, f"out={out}"]) == 0
    return out


def one_paragraph(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize("where", ["is_a_file", "under_a_file", "name_too_long"])
def test_out_that_cannot_be_a_folder_exits_2(tmp_path: Path, capsys, where: str) -> None:
    afile = tmp_path / "results.txt"
    afile.write_text("mine\n")
    out = {
        "is_a_file": afile,
        "under_a_file": afile / "run",
        "name_too_long": tmp_path / ("x" * 300) / "run",
    }[where]
    assert main([*ARGS, f"out={out}"]) == 2
    err = one_paragraph(capsys)
    assert f"out={out}" in err and "Choose another out=" in err
    why = "cannot create the folder" if where == "name_too_long" else f"{afile} is a file"
    assert why in err
    assert afile.read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.txt"]


def corrupt(path: Path, kind: str) -> None:
    if kind == "truncated":
        with path.open("r+b") as f:
            f.truncate(HEADERS + 8000)
    elif kind == "emptied":
        path.write_bytes(b"")
    else:  # flip bytes inside the first data block (the catalog and the rows)
        data = bytearray(path.read_bytes())
        data[HEADERS + 100 : HEADERS + 612] = b"\xa5" * 512
        path.write_bytes(bytes(data))


@pytest.mark.parametrize("kind", ["truncated", "emptied", "corrupted_pages"])
def test_damaged_store_is_moved_aside_and_recovered(
    finished: Path, tmp_path: Path, capsys, kind: str
) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    expected = keys(run / "episodes.duckdb")
    summary = json.loads((run / "summary.json").read_text())
    corrupt(run / "episodes.duckdb", kind)
    damaged_bytes = (run / "episodes.duckdb").read_bytes()

    assert main([*ARGS, f"out={run}"]) == 2
    err = one_paragraph(capsys)
    assert f"error: {run}: the run folder's store episodes.duckdb is damaged" in err
    assert "recovered 4 episodes into a new episodes.duckdb" in err
    assert "4 more from episodes.parquet" in err and "Run the same command again" in err
    aside = [p for p in run.iterdir() if p.name.startswith("episodes.damaged-")]
    assert len(aside) == 1 and aside[0].name in err
    assert aside[0].read_bytes() == damaged_bytes  # kept as it was, byte for byte
    assert keys(run / "episodes.duckdb") == expected

    assert main([*ARGS, f"out={run}"]) == 0  # resume: nothing left to run
    assert keys(run / "episodes.duckdb") == expected
    again = json.loads((run / "summary.json").read_text())
    assert again["tasks"] == summary["tasks"]


@pytest.mark.slow
def test_damaged_store_without_parquet_says_nothing_survived(
    finished: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "episodes.parquet").unlink()
    (run / "summary.json").unlink()
    corrupt(run / "episodes.duckdb", "emptied")
    assert main([*ARGS, f"out={run}"]) == 2
    assert "no episode could be recovered" in one_paragraph(capsys)
    assert keys(run / "episodes.duckdb") == []
    assert main([*ARGS, f"out={run}"]) == 0  # the resume runs all four again
    assert len(keys(run / "episodes.duckdb")) == 4
