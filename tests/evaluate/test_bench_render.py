"""The render benchmark runs and reports rates and ratios (figures are quoted, never asserted)."""

from __future__ import annotations

import json

import pytest

from metasim.bench.render import parse_size
from metasim.cli.main import main
from metasim.errors import MetasimInputError

TINY = ["--scenes", "lift_cube", "--sizes", "32x24", "--frames", "2", "--repeats", "1"]


def test_bench_render_cli_prints_json(capsys):
    assert main(["bench", "render", *TINY, "--num-envs", "2", "--table"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)  # the table goes to stderr: stdout stays JSON
    assert out["num_envs"] == 2 and out["repeats"] == 1 and out["mujoco_gl"]
    rows = out["results"]
    assert [(r["scene"], r["camera"]) for r in rows] == [
        ("lift_cube", "front"),
        ("lift_cube", "wrist"),
    ]
    for r in rows:
        assert (r["width"], r["height"]) == (32, 24)
        assert r["frames"] == 2  # rounded up to a multiple of num_envs
        for key in ("metasim_fps", "bare_fps", "bare_depth_fps"):
            assert r[key] > 0
        assert r["ratio"] == pytest.approx(r["metasim_fps"] / r["bare_fps"], rel=0.01)
    assert "ratio" in captured.err and "metasim fps" in captured.err


def test_bench_render_one_camera(capsys):
    assert main(["bench", "render", *TINY, "--camera", "wrist"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert [r["camera"] for r in rows] == ["wrist"]


@pytest.mark.parametrize(
    ("args", "word"),
    [
        (["--sizes", "640by480"], "WxH"),
        (["--sizes", "0x10"], "WxH"),
        (["--sizes", "4000x3000"], "offscreen"),
        (["--scenes", "no_such_scene"], "no_such_scene"),
        (["--scenes", "lift_cube", "--camera", "top"], "top"),
        (["--scenes", "lift_cube", "--frames", "0"], "in [1, 10000]"),
    ],
)
def test_bench_render_rejects_bad_arguments(capsys, args, word):
    assert main(["bench", "render", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and word in err and "Traceback" not in err


def test_parse_size():
    assert parse_size("640x480") == (640, 480)
    with pytest.raises(MetasimInputError):
        parse_size("640")
