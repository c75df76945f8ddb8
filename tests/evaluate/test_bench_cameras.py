"""`metasim bench cameras` and `bench physics --profile` run and report (figures are quoted
in bench/render.md and bench/physics.md, never asserted)."""

from __future__ import annotations

import json
import re

import pytest

from metasim.cli.main import main


def test_bench_cameras_prints_json(capsys):
    assert main(["bench", "cameras", "--num-envs", "2", "--repeats", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cameras"] == {"front": "256x256", "wrist": "128x128"}
    assert out["frames_per_observation"] == 4
    assert out["metasim_fps"] > 0 and out["bare_fps"] > 0
    assert out["ratio"] == pytest.approx(out["metasim_fps"] / out["bare_fps"], rel=0.01)


def test_bench_cameras_rejects_an_unknown_camera(capsys):
    assert main(["bench", "cameras", "--cameras", "top", "--num-envs", "1"]) == 2
    assert "top" in capsys.readouterr().err


def test_bench_physics_writes_a_profile(capsys, tmp_path):
    prof = tmp_path / "loop.prof"
    args = ["--num-envs", "1", "--steps", "5", "--repeats", "1", "--profile", str(prof)]
    assert main(["bench", "physics", *args]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["num_envs"] == 1
    # the physics call (MuJoCo's batch step; mj_step where an env's substeps run from Python)
    physics = re.compile(r"_batch\.step|mj_step")
    assert prof.is_file() and physics.search((tmp_path / "loop.prof.txt").read_text())
    assert physics.search(captured.err)
