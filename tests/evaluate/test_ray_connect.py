"""`executor=ray` never hangs on a cluster that is not there (issue #33 item 4): an address
that refuses or a listener that stays silent is one paragraph and exit 2 within
METASIM_RAY_CONNECT_TIMEOUT_S, Ctrl-C stops the connect, and a `ray_current_cluster` file
left by a killed `ray start --head` no longer makes a run without an address wait for
the dead cluster. Each run is a `metasim` process, as a user types it: a hang fails the
test at its timeout instead of holding the suite (Ray alone retried for ~585 s)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

pytest.importorskip("ray", reason="the [ray] extra is not installed (CI installs it)")

REPO = Path(__file__).resolve().parents[2]
SMALL = ["--quiet", "suite=tabletop", "suite.tasks=[lift_cube]", "episodes=1"]


def _metasim(out: Path, *args: str, timeout_s: str = "2", **env: str) -> subprocess.Popen[str]:
    environ = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    environ.update(
        PYTHONPATH=str(REPO),
        METASIM_RAY_CONNECT_TIMEOUT_S=timeout_s,
        RAY_USAGE_STATS_ENABLED="0",
        **env,
    )
    argv = [sys.executable, "-m", "metasim.cli", "eval", *SMALL, f"out={out}", *args]
    return subprocess.Popen(
        argv, cwd=REPO, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.fixture
def silent() -> Iterator[socket.socket]:
    """A TCP listener that accepts connections and never says a word."""
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen(16)
        yield sock


def _one_paragraph(proc: subprocess.Popen[str], limit: float) -> str:
    try:
        _, err = proc.communicate(timeout=limit)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: executor=ray: "), err
    return lines[0]


def test_an_address_that_refuses_is_one_paragraph(tmp_path: Path) -> None:
    proc = _metasim(tmp_path / "run", "executor=ray", "ray_address=127.0.0.1:2")
    err = _one_paragraph(proc, 90)
    assert "cannot reach the Ray cluster at '127.0.0.1:2'" in err and "refused" in err
    assert not (tmp_path / "run").exists()  # refused before the folder


def test_a_silent_listener_is_bounded(tmp_path: Path, silent: socket.socket) -> None:
    port = silent.getsockname()[1]
    start = time.monotonic()
    proc = _metasim(tmp_path / "run", "executor=ray", f"ray_address=127.0.0.1:{port}")
    err = _one_paragraph(proc, 90)
    assert "no answer within 2 s" in err and "METASIM_RAY_CONNECT_TIMEOUT_S" in err
    assert time.monotonic() - start < 60
    assert not (tmp_path / "run").exists()


def test_ctrl_c_stops_the_connect(tmp_path: Path, silent: socket.socket) -> None:
    """SIGINT while metasim waits for the cluster (once it has connected to the silent
    listener) ends the run at once (exit 130)."""
    port = silent.getsockname()[1]
    proc = _metasim(
        tmp_path / "run", "executor=ray", f"ray_address=127.0.0.1:{port}", timeout_s="300"
    )
    silent.settimeout(90)
    conn, _ = silent.accept()  # metasim is connecting now
    try:
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        conn.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "interrupted" in err, err


@pytest.fixture
def stale_cluster_file() -> Iterator[Path]:
    """RAY_TMPDIR (short: Ray's unix sockets live there) with the `ray_current_cluster`
    file a killed `ray start --head` leaves, naming a cluster that is gone."""
    root = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))
    (root / "ray").mkdir()
    (root / "ray" / "ray_current_cluster").write_text("127.0.0.1:2\n")
    yield root
    subprocess.run(["rm", "-rf", str(root)], check=False)


def test_a_stale_cluster_file_starts_a_local_ray(tmp_path: Path, stale_cluster_file: Path) -> None:
    proc = _metasim(tmp_path / "run", "executor=ray", RAY_TMPDIR=str(stale_cluster_file))
    try:
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "ray_current_cluster names a cluster at" in err and "starting a local Ray" in err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["tasks"]["lift_cube"]["n"] == 1
