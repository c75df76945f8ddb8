"""Run folders that used to crash `metasim report` with a traceback: exit 2, one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metasim.cli.main import main
from tests.cli_refusal import refused

TASK = {
    "success_rate": 0.5,
    "n": 2,
    "successes": 1,
    "ci95": [0.1, 0.9],
    "mean_progress": 0.5,
    "mean_steps": 10,
    "errors": 0,
}


def _summary(folder: Path, config: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps({"tasks": {"t": TASK}, "config": config}))
    return folder


def test_deep_summary_json(tmp_path: Path, capsys) -> None:
    (tmp_path / "summary.json").write_text("[" * 100_000 + "]" * 100_000)
    err = refused(capsys, ["report", str(tmp_path)])
    assert "summary.json" in err and "nested more than" in err


def test_parquet_missing_columns(tmp_path: Path, capsys) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = _summary(tmp_path / "run", {"policy": {"kind": "scripted"}, "seed": 0})
    pq.write_table(pa.table({"task": ["t"], "episode": [0]}), run / "episodes.parquet")
    err = refused(capsys, ["report", str(run)])
    assert "episodes.parquet" in err and "'seed' is missing" in err and "'success'" in err


@pytest.mark.parametrize("config", [{"policy": "scripted", "suite": "tabletop"}, {"policy": 3}])
def test_config_fields_that_are_not_mappings(tmp_path: Path, config: dict) -> None:
    """A hand-edited `config.policy: scripted` is shown, not a traceback."""
    run = _summary(tmp_path / "run", config)
    assert main(["report", str(run), "--videos", "0"]) == 0
    html = (run / "report.html").read_text()
    assert f"policy {config['policy']}" in html
