"""Two `metasim eval` processes into one run folder at once: the second is refused with
exit 2 naming the folder and the first process (pid and host); the first finishes with
every episode stored once; running the second again afterwards adds nothing twice."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

pytestmark = pytest.mark.slow

# Enough episodes that the first run outlives the second one's start-up (imports, Hydra).
N = 400
ARGS = ["suite.tasks=[lift_cube]", f"episodes={N}", "num_envs=1", "seed=5"]


def cmd(out: Path) -> list[str]:
    return [sys.executable, "-m", "metasim.cli", "eval", "--quiet", *ARGS, f"out={out}"]


def counts(path: Path) -> tuple[int, int]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        row = con.execute(
            "SELECT count(*), count(DISTINCT (task, cell, episode)) FROM episodes"
        ).fetchone()
    finally:
        con.close()
    assert row is not None
    return int(row[0]), int(row[1])


def test_second_eval_into_a_busy_folder_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = subprocess.Popen(cmd(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        lock = out / "run.lock"
        deadline = time.monotonic() + 120
        while f"pid {first.pid} " not in (lock.read_text() if lock.exists() else ""):
            assert first.poll() is None, "the first eval ended before taking the folder"
            assert time.monotonic() < deadline, "the first eval never locked the folder"
            time.sleep(0.1)
        second = subprocess.run(cmd(out), capture_output=True, text=True, timeout=300)
        assert first.wait(timeout=300) == 0, first.stderr.read() if first.stderr else ""
    finally:
        if first.poll() is None:
            first.kill()
    # Refused while the first held the folder (the lock lives only as long as it runs).
    assert second.returncode == 2, second.stderr
    err = second.stderr
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"error: out={out}: another metasim eval is writing this run folder" in err
    assert f"pid {first.pid} on host {socket.gethostname()}" in err
    assert counts(out / "episodes.duckdb") == (N, N)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tasks"]["lift_cube"]["n"] == N

    # Once the folder is free the same command resumes: nothing to run, nothing doubled.
    again = subprocess.run(cmd(out), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert counts(out / "episodes.duckdb") == (N, N)
    assert json.loads((out / "summary.json").read_text())["tasks"] == summary["tasks"]
