"""Every YAML metasim reads reports a bad field with its file, line and field path:
scenes (tests/test_bad_scenes.py), perturbation grids, suites and policy configs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import metasim.evaluate.config as config_module
from metasim.cli.main import main
from metasim.paths import EVAL, POLICIES


def _eval(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["eval", "--quiet", *argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_a_grid_error_names_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "name: g\ndesign: ofat\nfactors:\n"
        "  - {name: lat, axis: action_latency, levels: [0, 2]}\n"
        "  - {name: fr, axis: friction, levels: [1.0, 0.5], speed: 3}\n"
    )
    err = _eval([f"perturbation={grid}", f"out={tmp_path / 'run'}"], capsys)
    assert str(grid) in err and "line 5, factors[1].speed" in err


@pytest.fixture
def config_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Copies of eval/ and policies/ the test may add files to."""
    evals, policies = tmp_path / "eval", tmp_path / "policies"
    shutil.copytree(EVAL, evals)
    shutil.copytree(POLICIES, policies)
    monkeypatch.setattr(config_module, "EVAL", evals)
    monkeypatch.setattr(config_module, "POLICIES", policies)
    return evals, policies


def test_a_policy_file_error_names_file_line_and_key(
    config_dirs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, policies = config_dirs
    (policies / "mine.yaml").write_text(
        "kind: openpi\nhost: 127.0.0.1\nport: 99999\nactions: {space: ee_delta}\n"
    )
    err = _eval(["policy=mine", f"out={tmp_path / 'run'}"], capsys)
    assert "mine.yaml line 3, policy.port" in err
    # the same bad value given on the command line is reported as the command line's
    err = _eval(["policy=openpi", "policy.port=99999", f"out={tmp_path / 'run'}"], capsys)
    assert "policy.port" in err and "openpi.yaml line" not in err
    assert not (tmp_path / "run").exists()


def test_a_suite_file_error_names_file_line_and_field(
    config_dirs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evals, _ = config_dirs
    (evals / "mine.yaml").write_text("name: mine\ndescription: d\ntasks: []\n")
    err = _eval(["suite=mine", f"out={tmp_path / 'run'}"], capsys)
    assert "mine.yaml line 3, suite.tasks" in err


def test_a_policy_file_with_a_syntax_error_names_file_and_line(
    config_dirs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, policies = config_dirs
    bad = policies / "broken.yaml"
    bad.write_text("kind: openpi\nport: [8000\n")
    err = _eval([f"out={tmp_path / 'run'}"], capsys)
    assert str(bad) in err and "line" in err and "YAML syntax error" in err
