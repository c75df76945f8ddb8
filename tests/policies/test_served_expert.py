"""The scripted expert served over the openpi protocol (`metasim serve`) and evaluated
through the openpi client adapter gives the same results as in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.paths import POLICIES
from metasim.policies.base import PolicyOptions
from metasim.policies.serving import session_factory
from metasim.policies.transport.server import PolicyServer

REMOTE = OmegaConf.to_container(OmegaConf.load(POLICIES / "metasim_remote.yaml"))


def remote_options(port: int, **extra: object) -> dict[str, object]:
    opts = {k: v for k, v in dict(REMOTE).items() if k not in ("kind", "execute")}  # type: ignore[arg-type]
    opts.update(port=port, **extra)
    return opts


def outcomes(records) -> list[tuple[int, bool, int, str | None]]:
    return sorted((r.episode, r.success, r.steps, r.error) for r in records)


def test_served_expert_matches_in_process(lift_scene):
    local = list(run_task(lift_scene, RolloutSpec.of("scripted", seed=3, num_envs=3), 6))
    server = PolicyServer(session_factory("scripted", PolicyOptions()), metadata={"x": 1})
    with server:
        remote = list(
            run_task(
                lift_scene,
                RolloutSpec.of("openpi", remote_options(server.port), seed=3, num_envs=3),
                6,
            )
        )
    assert all(r.error is None for r in remote), [r.error for r in remote]
    # same episodes, same outcomes, same lengths: the transport changes nothing
    assert outcomes(remote) == outcomes(local)
    assert sum(r.success for r in remote) == sum(r.success for r in local) >= 5


@pytest.mark.slow
def test_metasim_serve_and_eval_on_the_command_line(tmp_path: Path):
    env = {**os.environ, "METASIM_API_KEY": "s3cret"}
    serve = subprocess.Popen(
        [sys.executable, "-m", "metasim.cli", "serve", "policy=scripted", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert serve.stderr is not None
        line = serve.stderr.readline()
        assert "serving policy 'scripted' on ws://127.0.0.1:" in line, line
        assert "API key required" in line
        port = int(line.split("ws://127.0.0.1:")[1].split()[0].strip("/"))
        base = [sys.executable, "-m", "metasim.cli", "eval", "--quiet", "suite=tabletop"]
        args = [
            "policy=metasim_remote",
            f"policy.port={port}",
            "+suite.tasks=[lift_cube]",
            "episodes=3",
            "num_envs=3",
        ]
        # without the key every episode fails with the reason, and the run finishes
        out = tmp_path / "nokey"
        done = subprocess.run(
            [*base, *args, f"out={out}"], capture_output=True, text=True, timeout=300
        )
        summary = json.loads((out / "summary.json").read_text())
        assert done.returncode == 0, done.stderr
        lift = summary["tasks"]["lift_cube"]
        assert lift["successes"] == 0 and lift["errors"] == 3
        out = tmp_path / "key"
        done = subprocess.run(
            [*base, *args, "policy.api_key=s3cret", f"out={out}"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        lift = json.loads((out / "summary.json").read_text())["tasks"]["lift_cube"]
        assert lift["successes"] == 3 and lift["errors"] == 0
    finally:
        serve.terminate()
        serve.wait(timeout=30)


def test_server_refuses_a_client_that_sends_no_scene(lift_scene):
    server = PolicyServer(session_factory("scripted", PolicyOptions()))
    with server:
        opts = remote_options(server.port, retries=0)
        opts["observation"] = {"raw": False}
        t0 = time.perf_counter()
        records = list(run_task(lift_scene, RolloutSpec.of("openpi", opts, seed=0, num_envs=2), 2))
    assert time.perf_counter() - t0 < 60
    assert all(r.error and "metasim/scene" in r.error for r in records)
    assert not np.any([r.success for r in records])
