"""`metasim report` checks the column types of episodes.parquet before reading a value
(issue #23, item 7): a `success` column of text ("False") must not count as successes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metasim.cli.main import main
from metasim.evaluate.config import compose
from metasim.evaluate.runner import run_eval


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report_types") / "run"
    run_eval(compose(["episodes=2", "num_envs=2", "suite.tasks=[lift_cube]", f"out={out}"]))
    return out


def _with(table: pa.Table, name: str, values: pa.Array | None) -> pa.Table:
    i = table.column_names.index(name)
    return table.remove_column(i) if values is None else table.set_column(i, name, values)


@pytest.mark.parametrize(
    ("name", "values", "message"),
    [
        ("success", pa.array(["False"] * 2), "column 'success' holds string, expected boolean"),
        ("success", pa.array([1, 0]), "column 'success' holds int64, expected boolean"),
        ("success", pa.array([True, None]), "column 'success' has 1 empty value(s)"),
        ("episode", pa.array([0.5, 1.5]), "column 'episode' holds double, expected integer"),
        ("progress", pa.array(["1", "0"]), "column 'progress' holds string, expected number"),
        ("task", None, "column 'task' is missing"),
    ],
)
def test_a_column_of_the_wrong_type_exits_2(
    run_dir: Path,
    tmp_path: Path,
    name: str,
    values: pa.Array | None,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    table = pq.read_table(run / "episodes.parquet")
    pq.write_table(_with(table, name, values), run / "episodes.parquet")
    assert main(["report", str(run), "--videos", "0"]) == 2
    err = capsys.readouterr().err
    assert message in err and "episodes.parquet" in err and "Traceback" not in err
    assert not (run / "report.html").exists()


def test_the_parquet_eval_writes_passes(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert main(["report", str(run_dir), "--out", str(out), "--videos", "0"]) == 0
    assert out.is_file()
