"""`metasim serve` refuses to serve other machines without an API key unless told to,
and refuses a negative idle timeout (issue #23, items 3 and 7)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from metasim.cli.serve_cmd import check_exposure, is_loopback
from metasim.errors import MetasimInputError

ROOT = Path(__file__).resolve().parents[2]


def _serve(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`metasim serve ARGS policy=scripted` in a subprocess (a server that starts instead
    of refusing is stopped by the timeout, failing the test rather than hanging it)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("METASIM_API_KEY", None)
    cmd = [sys.executable, "-m", "metasim.cli", "serve", *args, "policy=scripted"]
    return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_an_exposed_host_without_a_key_exits_2() -> None:
    proc = _serve("--host", "0.0.0.0", "--port", "0")
    assert proc.returncode == 2
    assert "--api-key" in proc.stderr and "--allow-unauthenticated" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1  # one paragraph


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "", "my-host.example"])
def test_every_exposed_host_without_a_key_is_refused(host: str) -> None:
    with pytest.raises(MetasimInputError, match="--allow-unauthenticated"):
        check_exposure(host, None, allowed=False)
    check_exposure(host, "key", allowed=False)  # a key, or the user's say-so, is enough
    check_exposure(host, None, allowed=True)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_hosts_need_no_key(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.slow
@pytest.mark.parametrize("value", ["-1", "nan", "-inf"])
def test_a_negative_idle_timeout_is_refused(value: str) -> None:
    proc = _serve("--port", "0", f"--idle-timeout={value}")
    assert proc.returncode == 2
    assert "--idle-timeout" in proc.stderr and ">= 0" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_allow_unauthenticated_serves_every_interface_and_says_so() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("METASIM_API_KEY", None)
    args = ["serve", "--host", "0.0.0.0", "--port", "0", "--allow-unauthenticated"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "metasim.cli", *args, "policy=scripted"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "WITHOUT an API key" in line, line
        port = re.search(r":(\d+)", line.split("on ws://")[1])
        assert port is not None
        with urllib.request.urlopen(f"http://127.0.0.1:{port.group(1)}/healthz", timeout=10) as r:
            assert r.status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
