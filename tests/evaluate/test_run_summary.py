"""summary.json and episodes.parquet round-trip through their types (`RunSummary`,
`EpisodeRecord`), the types `metasim report` and `metasim correlate` load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.errors import MetasimInputError
from metasim.evaluate.config import compose
from metasim.evaluate.records import RunSummary
from metasim.evaluate.runner import run_eval
from metasim.report.data import load_run


def _grid(tmp_path: Path) -> Path:
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "name: g\ndesign: factorial\nfactors:\n"
        "  - {name: lat, axis: action_latency, levels: [0, 4]}\n"
        "  - {name: fr, axis: friction, levels: [1.0, 0.5]}\n"
    )
    return grid


def test_a_summary_written_by_the_runner_round_trips(tmp_path: Path) -> None:
    out = tmp_path / "run"
    grid = _grid(tmp_path)
    args = ["suite.tasks=[lift_cube]", "episodes=3", "num_envs=3", f"perturbation={grid}"]
    cfg = compose([*args, f"out={out}"])
    result = run_eval(cfg)
    text = (out / "summary.json").read_text()
    loaded = RunSummary.load(out)
    assert loaded.to_json() == text  # byte for byte
    assert loaded == RunSummary.model_validate(json.loads(result.summary.to_json()))
    assert loaded.variance_shares is not None and loaded.sensitivity is not None
    assert set(loaded.cells) and all(
        c.factors.keys() == {"lat", "fr"} for c in loaded.cells.values()
    )
    # the episodes: the store's records, the parquet rows the report loads: the same
    run = load_run(out)
    assert run.episodes == result.records
    assert all(
        isinstance(e.factors, dict) and set(e.factors) == {"lat", "fr"} for e in run.episodes
    )


def test_a_malformed_summary_is_an_input_error_naming_the_field(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(
        json.dumps({"tasks": {"t": {"n": 3, "success_rate": 2}}})
    )
    with pytest.raises(MetasimInputError) as err:
        RunSummary.load(tmp_path)
    assert "tasks.t.success_rate" in err.value.render()


def test_schema_summary_prints_the_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "summary"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "RunSummary" and "tasks" in schema["required"]
    task = schema["$defs"]["TaskSummary"]["properties"]
    assert {"success_rate", "n", "ci95", "mean_steps_to_success"} <= set(task)
