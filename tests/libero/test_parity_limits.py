"""`metasim libero parity` refuses arguments that would run for hours or allocate
gigabytes, and a broken reference worker is reported in one line within a bounded wait."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.libero.reference import simulator as reference
from metasim.libero.reference.simulator import ReferenceSim, RefSimError
from metasim.reference.refvenv import STAMP

# `metasim check CHECK --benchmark NAME`: the one spelling of a benchmark's checks.
PARITY_ARGV = ["check", "--benchmark", "libero", "parity"]

PARITY = [*PARITY_ARGV, "--suite", "libero_goal", "--task", "0", "--init", "0"]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--steps", "1001"], "--steps: expected a whole number in [1, 1000]"),
        (["--steps", "100000000"], "--steps"),
        (["--steps", "1000000000"], "--steps"),
        (["--seed", "-1"], "--seed"),
        (["--seed", str(2**32)], "--seed"),
        (["--task", "-1"], "--task"),
    ],
)
def test_parity_arguments_are_bounded(capsys, extra: list[str], expected: str) -> None:
    """Refused while parsing: no simulator starts (LIBERO's horizon is 1,000 steps)."""
    code = main([*PARITY, *extra])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1


def _script(tmp_path: Path, body: str) -> Path:
    """An executable standing in for the reference venv's python (an injected fault)."""
    path = tmp_path / "python"
    path.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n")
    path.chmod(0o755)
    return path


def test_a_silent_worker_is_given_up_on_at_startup(tmp_path: Path) -> None:
    silent = _script(tmp_path, "time.sleep(60)")
    start = time.monotonic()
    with pytest.raises(RefSimError, match=r"gave no reply in 1s"):
        ReferenceSim(silent, startup=1.0)
    assert time.monotonic() - start < 15


def test_a_worker_that_prints_no_json_is_one_line(tmp_path: Path) -> None:
    noisy = _script(tmp_path, "print('ERROR: pip could not install', flush=True); time.sleep(5)")
    with pytest.raises(RefSimError, match="sent no JSON: 'ERROR: pip") as info:
        ReferenceSim(noisy, startup=10.0)
    assert "\n" not in str(info.value)


def test_a_worker_that_dies_is_one_line(tmp_path: Path) -> None:
    dead = _script(tmp_path, "sys.stderr.write('Traceback\\n  line 1\\nBoom\\n'); sys.exit(1)")
    with pytest.raises(RefSimError, match="worker exited") as info:
        ReferenceSim(dead, startup=10.0)
    assert "\n" not in str(info.value) and "Boom" in str(info.value)


def _venv(tmp_path: Path, body: str, stamp: str | None = None) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    _script(venv / "bin", body)
    (venv / STAMP).write_text(stamp or json.dumps(list(reference.SPEC.requirements)))
    return venv


def test_a_hung_interpreter_is_reported_in_one_line(tmp_path: Path) -> None:
    venv = _venv(tmp_path, "time.sleep(60)")
    with pytest.raises(RefSimError, match="did not finish importing LIBERO in 1s"):
        replace(reference.SPEC, probe_timeout=1.0).venv_ok(venv)


def test_a_damaged_stamp_means_rebuild_not_a_traceback(tmp_path: Path) -> None:
    venv = _venv(tmp_path, "print('3.17.0')", stamp="{not json")
    assert reference.venv_ok(venv) is False
