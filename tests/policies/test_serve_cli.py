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

from metasim.cli.main import main
from metasim.cli.serve_cmd import is_loopback

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "", "my-host.example"])
def test_an_exposed_host_without_a_key_is_refused(
    host: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("METASIM_API_KEY", raising=False)
    assert main(["serve", "--host", host, "--port", "0", "policy=scripted"]) == 2
    err = capsys.readouterr().err
    assert "--api-key" in err and "--allow-unauthenticated" in err
    assert "Traceback" not in err and err.count("\n") == 1  # one paragraph


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_hosts_need_no_key(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("value", ["-1", "nan", "-inf"])
def test_a_negative_idle_timeout_is_refused(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--port", "0", f"--idle-timeout={value}", "policy=scripted"]) == 2
    err = capsys.readouterr().err
    assert "--idle-timeout" in err and ">= 0" in err and "Traceback" not in err


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
