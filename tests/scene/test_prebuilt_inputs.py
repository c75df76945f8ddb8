"""Issue 47 finding 8: a prebuilt folder's files go through the guards of every other
input. The saved model is decompressed in a bounded stream (a gzip bomb, a symlink to
/dev/zero: exit 2 naming the file, not gigabytes of memory), its JSON files through
`guards.load_json` (size and depth limits), the scene through the YAML loader's
reference checks, and a model that is not the scene's is refused by name. Every case
is exit 2 with one paragraph and no traceback, before a run folder is written."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from metasim.cli.main import main as cli_main
from metasim.errors import MetasimInputError
from metasim.inputs import check_npz, read_gzip
from metasim.scene import prebuilt


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lift_cube prebuilt into `pre/`, close_drawer into `other/` beside it."""
    out = tmp_path_factory.mktemp("exported")
    assert cli_main(["scene", "prebuild", "lift_cube", "--out", str(out / "pre")]) == 0
    assert cli_main(["scene", "prebuild", "close_drawer", "--out", str(out / "other")]) == 0
    return out / "pre"


@pytest.fixture
def folder(exported: Path, tmp_path: Path) -> Path:
    """A copy of the exported folder, the test's to damage."""
    shutil.copytree(exported, tmp_path / "pre")
    return tmp_path / "pre"


@pytest.fixture
def refused(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[[], str]:
    """`eval` of the folder's lift_cube: exit 2, one paragraph, no run folder; its error."""
    monkeypatch.setenv(prebuilt.ENV, str(folder))

    def run_eval() -> str:
        capsys.readouterr()
        run = folder.parent / "run"
        args = ["eval", "--quiet", "suite=prebuilt", "episodes=1", "num_envs=1"]
        code = cli_main([*args, f"out={run}"])
        err = capsys.readouterr().err
        assert code == 2, err
        assert "Traceback" not in err and err.strip().count("\n") == 0, err
        assert not run.exists()
        return err

    return run_eval


def test_a_gzip_bomb_and_a_device_are_refused_unread(
    folder: Path, refused: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    mjb = folder / "lift_cube.mjb.gz"
    monkeypatch.setenv("METASIM_MODEL_MAX_BYTES", str(1 << 20))
    mjb.write_bytes(gzip.compress(b"\0" * (4 << 20)))  # 4 MiB of zeros in a few KiB
    assert mjb.stat().st_size < 64 << 10
    err = refused()
    assert f"{mjb}: the saved model decompressed is over the limit of 1048576" in err, err
    assert "METASIM_MODEL_MAX_BYTES" in err
    with pytest.raises(MetasimInputError, match="decompressed is over the limit"):
        read_gzip(mjb, "METASIM_MODEL_MAX_BYTES", "saved model")

    mjb.unlink()
    mjb.symlink_to("/dev/zero")
    err = refused()
    assert "expected a saved model (a regular file), got a pipe, device or folder" in err
    mjb.unlink()
    os.mkfifo(mjb)  # a pipe nobody writes: reading it would block forever
    assert "a regular file" in refused()


def test_prebuilt_json_files_are_bounded(
    exported: Path, folder: Path, refused: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """200,000-deep JSON was a RecursionError; a file over METASIM_JSON_MAX_BYTES was read."""
    deep = "[" * 200_000 + "]" * 200_000
    suites = folder / "suites.json"
    suites.write_text('{"suites": ' + deep + "}")
    assert f"{suites}: nested more than 64 levels deep" in refused()
    shutil.copy(exported / "suites.json", suites)

    scene = folder / "lift_cube.prebuilt.json"
    scene.write_text('{"format": 1, "scene": ' + deep + "}")
    assert f"{scene}: nested more than 64 levels deep" in refused()
    shutil.copy(exported / "lift_cube.prebuilt.json", scene)
    monkeypatch.setenv("METASIM_JSON_MAX_BYTES", "1000")
    err = refused()
    assert "over the limit of 1000 bytes (METASIM_JSON_MAX_BYTES)" in err, err


def test_a_model_of_another_scene_is_refused_by_name(
    exported: Path, folder: Path, refused: Callable[[], str]
) -> None:
    """close_drawer's model saved as lift_cube's: the model's hash in the prebuilt file
    refuses it; a file exported before the hash was recorded gets a clear error from
    the names the scene needs (was KeyError: "Invalid name 'cube'")."""
    shutil.copy(exported.parent / "other/close_drawer.mjb.gz", folder / "lift_cube.mjb.gz")
    err = refused()
    assert "not the model exported with lift_cube.prebuilt.json" in err, err
    path = folder / "lift_cube.prebuilt.json"
    doc = json.loads(path.read_text())
    del doc[prebuilt.MODEL_HASH]
    path.write_text(json.dumps(doc))
    err = refused()
    assert "its saved model is not this scene's (a model from another scene?)" in err, err
    assert "Invalid name 'cube'" in err


def test_the_yaml_scene_checks_apply_to_a_prebuilt_scene(
    folder: Path, refused: Callable[[], str]
) -> None:
    """`scene.objects: []` in a prebuilt file: its predicates name a missing object, as
    the YAML loader says (was StopIteration from the first episode)."""
    path = folder / "lift_cube.prebuilt.json"
    doc = json.loads(path.read_text())
    doc["scene"]["objects"] = []
    path.write_text(json.dumps(doc))
    err = refused()
    assert "scene.task.success.lifted.object: names object 'cube', which the scene does not" in err
    assert cli_main(["scene", "validate", f"prebuilt:{path}"]) == 2


def test_an_npz_is_bounded_by_its_declared_sizes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An init_states .npz (a prebuilt's `<name>.init.npz`): its members' declared sizes
    are checked before any is decompressed."""
    path = tmp_path / "s.npz"
    np.savez_compressed(path, states=np.zeros((1024, 256)))  # 2 MiB decoded, a few KiB
    check_npz(path)
    monkeypatch.setenv("METASIM_NPY_MAX_BYTES", str(1 << 20))
    with pytest.raises(MetasimInputError, match="decompressed is over the limit of 1048576"):
        check_npz(path)
    (tmp_path / "z.npz").symlink_to("/dev/zero")
    with pytest.raises(MetasimInputError, match="a regular file"):
        check_npz(tmp_path / "z.npz")


def test_a_grid_that_rebuilds_a_prebuilt_scene_is_refused_before_any_cell(
    exported: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`perturbation=standard` on a prebuilt task was refused only once its second cell
    (object_shift_x=0.06) compiled, with cell 1 of 13 run and the folder left. Now the
    plan refuses it, naming the cell and the factor; a grid of physics factors (per-env
    model edits) plans."""
    from metasim.evaluate.config import compose
    from metasim.evaluate.plan import Plan

    monkeypatch.setenv(prebuilt.ENV, str(exported))
    run = tmp_path / "run"
    args = ["eval", "--quiet", "suite=prebuilt", "episodes=1", "num_envs=1"]
    assert cli_main([*args, "perturbation=standard", f"out={run}"]) == 2
    err = capsys.readouterr().err
    assert "error: perturbation 'standard': cell " in err and "(object_shift_x=0.06)" in err
    assert "changes the scene of the prebuilt task 'prebuilt:lift_cube'" in err
    assert "Traceback" not in err and not run.exists()
    grid = tmp_path / "runtime.yaml"
    grid.write_text(
        "name: runtime\ndesign: ofat\nfactors:\n"
        "  - {name: latency, axis: action_latency, levels: [0, 2]}\n"
        "  - {name: noise, axis: action_noise, levels: [0.0, 0.01]}\n"
    )
    plan = Plan.of(compose(["suite=prebuilt", f"perturbation={grid}"]))
    assert len(plan.cells) == 3
