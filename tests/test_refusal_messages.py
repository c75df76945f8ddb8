"""Issue 47's minor messages: each refusal names the setting it is about and suggests
only what helps. `robosuite xcheck --episodes 5-2` said `--inits`; a camera policy on a
prebuilt scene without textures said `backend=mujoco` and suggested running with
backend=mujoco (render=warp or not: it is the scene's textures); a bad `init_states` in
a prebuilt scene said "scene: Field required"; compare's refusal of runs of two suites
suggested `--unpaired`, which only helps runs of two seeds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.errors import MetasimInputError
from metasim.inputs import index_list
from metasim.scene import prebuilt
from tests.cli_refusal import refused

# `metasim check CHECK --benchmark NAME`: the one spelling of a benchmark's checks.
XCHECK_ARGV = ["check", "--benchmark", "robosuite", "xcheck"]


def test_episode_ranges_name_the_flag_they_came_from(capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(capsys, [*XCHECK_ARGV, "--episodes", "5-2"])
    assert err.startswith("error: --episodes: '5-2': expected episodes like '0-4'"), err
    assert "--inits" not in err
    assert index_list("0-2,7,1", "--episodes", "episode", 10) == [0, 1, 2, 7]
    with pytest.raises(MetasimInputError, match=r"episode 11 is out of range; expected 0\.\.10"):
        index_list("3-11", "--episodes", "episode", 10)


@pytest.fixture(scope="module")
def untextured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pre")
    argv = ["scene", "prebuild", "lift_cube", "--out", str(out), "--no-textures"]
    assert main(argv) == 0
    return out


@pytest.mark.parametrize("render", ["warp", "opengl"])
def test_a_camera_policy_on_an_untextured_prebuilt_scene_names_the_scene(
    untextured: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    render: str,
) -> None:
    monkeypatch.setenv(prebuilt.ENV, str(untextured))
    out = tmp_path / "run"
    argv = ["eval", "--quiet", "suite=prebuilt", "policy=openpi", f"render={render}"]
    err = refused(capsys, [*argv, "episodes=1", "num_envs=1", f"out={out}"])
    path = untextured / "lift_cube.prebuilt.json"
    assert err.startswith(f"error: {path}: prebuilt without its textures"), err
    assert "renders its cameras (front" in err and "backend=mujoco" not in err
    assert not out.exists()


def test_a_bad_init_states_in_a_prebuilt_scene_names_the_field(
    untextured: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "pre"
    shutil.copytree(untextured, folder)
    path = folder / "lift_cube.prebuilt.json"
    doc = json.loads(path.read_text())
    doc["scene"]["task"]["init_states"] = {"key": "states"}
    path.write_text(json.dumps(doc))
    err = refused(capsys, ["scene", "validate", f"prebuilt:{path}"])
    assert "scene.task.init_states.file: Field required" in err, err
    assert "scene: Field required" not in err


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("runs")
    for name, args in {
        "lift": ["suite.tasks=[lift_cube]"],
        "lift_seed1": ["suite.tasks=[lift_cube]", "seed=1"],
        "stack": ["suite.tasks=[stack_cube]"],
    }.items():
        argv = ["eval", "--quiet", "policy=noop", "episodes=1", "num_envs=1", *args]
        assert main([*argv, f"out={base / name}"]) == 0
    return base


def test_compare_suggests_unpaired_only_where_it_helps(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refused(capsys, ["compare", str(runs / "lift"), str(runs / "stack")])
    assert "config.suite.tasks differ" in err and "--unpaired" not in err, err
    err = refused(capsys, ["compare", str(runs / "lift"), str(runs / "stack"), "--unpaired"])
    assert "config.suite.tasks differ" in err
    err = refused(capsys, ["compare", str(runs / "lift"), str(runs / "lift_seed1")])
    assert "config.seed differs" in err and "pass --unpaired" in err, err
    assert main(["compare", str(runs / "lift"), str(runs / "lift_seed1"), "--unpaired"]) == 0
