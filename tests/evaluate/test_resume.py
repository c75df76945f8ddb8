"""Resume after SIGKILL: no finished episode lost or duplicated, same final summary."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import duckdb
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.slow

ARGS = ["suite.tasks=[lift_cube,close_drawer]", "episodes=24", "num_envs=3", "seed=1"]
COLS = ["task", "episode", "seed", "success", "progress", "steps", "error"]


def _rows(run_dir):
    return pq.read_table(run_dir / "episodes.parquet").select(COLS).to_pylist()


def _count(run_dir):
    path = run_dir / "episodes.duckdb"
    if not path.exists():
        return 0, 0
    con = duckdb.connect(str(path), read_only=True)
    try:
        # A run killed while it was still creating its store leaves no table yet: nothing
        # was recorded (a loaded machine can take longer than the first kill point to start).
        rows = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        tables = {t for (t,) in rows}
        if "episodes" not in tables:
            return 0, 0
        total, distinct = con.execute(
            "SELECT count(*), count(DISTINCT (task, cell, episode)) FROM episodes"
        ).fetchone()
    finally:
        con.close()
    return total, distinct


def _cmd(out):
    return [sys.executable, "-m", "metasim.cli", "eval", "--quiet", *ARGS, f"out={out}"]


def test_sigkill_at_random_points_then_resume(tmp_path):
    # The uninterrupted reference, timed, so kill points scale with this machine's speed.
    start = time.perf_counter()
    subprocess.run(_cmd(tmp_path / "ref"), check=True, capture_output=True)
    full = time.perf_counter() - start
    ref_summary = json.loads((tmp_path / "ref" / "summary.json").read_text())
    out = tmp_path / "killed"
    rng = random.Random(7)
    kills, finished, seen = 0, False, []
    for attempt in range(6):
        proc = subprocess.Popen(_cmd(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # Up to five kills at random points, then the run is let finish.
        deadline = full * rng.uniform(0.3, 1.0) if attempt < 5 else 600.0
        try:
            proc.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
            total, distinct = _count(out)
            assert total == distinct, "a resumed run recorded an episode twice"
            assert total >= (seen[-1] if seen else 0), "finished episodes were lost"
            seen.append(total)
            continue
        assert proc.returncode == 0, proc.stderr.read().decode()
        finished = True
        break
    assert finished, f"the run never completed ({kills} kills, counts {seen})"
    assert kills >= 1, "the run finished before any kill; the test proved nothing"
    print(f"{kills} kills; episodes recorded after each: {seen}")
    assert _rows(out) == _rows(tmp_path / "ref")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tasks"] == ref_summary["tasks"]


def test_resume_refuses_a_different_run(tmp_path, capsys):
    from metasim.cli.main import main

    out = tmp_path / "run"
    assert main(["eval", "--quiet", *ARGS, "episodes=2", f"out={out}"]) == 0
    assert main(["eval", "--quiet", *ARGS, "episodes=2", "seed=9", f"out={out}"]) == 2
    assert "different seed" in capsys.readouterr().err
    # The same settings resume (nothing left to run) and keep the results.
    start = time.time()
    assert main(["eval", "--quiet", *ARGS, "episodes=2", f"out={out}"]) == 0
    assert time.time() - start < 30
    assert len(_rows(out)) == 4
