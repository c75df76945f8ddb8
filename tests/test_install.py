"""Installing metasim where GPU users are (issue 49, item 4): the wheel's metadata admits
Python 3.11 to 3.13 and has the `gpu` and `smolvla` extras; the package's modules parse
under the 3.12 and 3.13 grammars; MUJOCO_GL is chosen (EGL, else OSMesa, else off with a
clear error on render) when the user set none.

No 3.12 interpreter is on this machine: `ast.parse(..., feature_version=...)` is the check
here, and bench/gpu_device.sh records a real 3.12 import of the package on a lent GPU
machine (docs/install.md, "On a GPU machine").
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from metasim.gl import NO_GL_HINT, NoOpenGL, check_gl, choose_mujoco_gl

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def metadata(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The wheel's METADATA as setuptools builds it (PEP 517's prepare_metadata hook, in
    a subprocess from the repository root, offline): field -> its values."""
    out = tmp_path_factory.mktemp("dist-info")
    code = (
        "import sys; from setuptools import build_meta; "
        "print(build_meta.prepare_metadata_for_build_wheel(sys.argv[1]))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-2000:]
    name = run.stdout.strip().splitlines()[-1]
    message = Parser().parsestr((out / name / "METADATA").read_text())
    return {key: message.get_all(key) or [] for key in set(message.keys())}


def test_the_wheel_admits_python_3_11_to_3_13(metadata: dict[str, list[str]]) -> None:
    (spec,) = metadata["Requires-Python"]
    admits = SpecifierSet(spec)
    for version in ("3.11", "3.11.9", "3.12", "3.12.3", "3.13", "3.13.1"):
        assert admits.contains(version), (spec, version)
    for version in ("3.10", "3.14"):
        assert not admits.contains(version), (spec, version)


def test_the_gpu_and_smolvla_extras(metadata: dict[str, list[str]]) -> None:
    """`gpu`: MuJoCo Warp and torch; `smolvla`: transformers inside LeRobot 0.4.4's pin
    (>=4.57.1,<5) with the tokenizers transformers 4.57.6 pins (>=0.22,<=0.23.0)."""
    assert {"gpu", "smolvla", "warp", "torch"} <= set(metadata["Provides-Extra"])
    by_extra: dict[str, dict[str, Requirement]] = {}
    for line in metadata["Requires-Dist"]:
        req = Requirement(line)
        for extra in ("gpu", "smolvla"):
            if req.marker is not None and req.marker.evaluate({"extra": extra}):
                by_extra.setdefault(extra, {})[req.name] = req
    assert by_extra["gpu"]["metasim"].extras == {"warp", "torch"}
    pins = {name: req.specifier for name, req in by_extra["smolvla"].items()}
    (transformers,) = [str(s).removeprefix("==") for s in pins["transformers"]]
    assert SpecifierSet(">=4.57.1,<5.0.0").contains(transformers)  # LeRobot 0.4.4's pin
    (tokenizers,) = [str(s).removeprefix("==") for s in pins["tokenizers"]]
    assert SpecifierSet(">=0.22.0,<=0.23.0").contains(tokenizers)  # transformers' pin
    assert "num2words" in pins


@pytest.mark.parametrize("version", [(3, 12), (3, 13)])
def test_the_package_parses_under_newer_grammars(version: tuple[int, int]) -> None:
    """Every module of the package parses with the grammar of `version` (what this 3.11
    interpreter can check; the device script imports it under a real 3.12)."""
    files = sorted((ROOT / "metasim").rglob("*.py"))
    assert len(files) > 100
    for path in files:
        ast.parse(path.read_text(), filename=str(path), feature_version=version)


def test_mujoco_gl_is_chosen_by_what_the_machine_has() -> None:
    """The user's value stays; else EGL, else OSMesa, else `disable` (mujoco imports,
    renders raise NoOpenGL with the hint)."""
    have = {"EGL": "libEGL.so.1", "OSMesa": "libOSMesa.so.8"}
    env = {"MUJOCO_GL": "glfw"}
    assert choose_mujoco_gl(env, have.get) == "glfw"
    env = {}
    assert choose_mujoco_gl(env, have.get) == "egl" and env == {"MUJOCO_GL": "egl"}
    env = {}
    assert choose_mujoco_gl(env, {"OSMesa": "libOSMesa.so.8"}.get) == "osmesa"
    check_gl(env)  # a library was found: no error
    env = {}
    assert choose_mujoco_gl(env, {}.get) == "disable"
    with pytest.raises(NoOpenGL, match="apt-get install libegl1"):
        check_gl(env)
    check_gl({"MUJOCO_GL": "disable"})  # the user's own choice: no error from metasim
    assert "render=warp" in NO_GL_HINT


def test_without_any_opengl_metasim_imports_and_a_render_says_why(tmp_path: Path) -> None:
    """A machine with neither libEGL nor libOSMesa (simulated: the finder returns None):
    `import metasim, mujoco` works, a scene compiles into a handler, and a camera render
    raises NoOpenGL."""
    code = """
import ctypes.util, os
ctypes.util.find_library = lambda name: None  # a machine without EGL and OSMesa
os.environ.pop("MUJOCO_GL", None)
import metasim, mujoco
assert os.environ["MUJOCO_GL"] == "disable", os.environ["MUJOCO_GL"]
from metasim.gl import NoOpenGL
from metasim.scene.sources import compile_task
from metasim.sim.mujoco.handler import BackendHandler
handler = BackendHandler(compile_task("scenes/lift_cube.yaml"), 1)
try:
    handler.render(handler.model.camera(0).name, [0], 32, 32)
except NoOpenGL as exc:
    print("NoOpenGL:", exc)
"""
    env = {k: v for k, v in __import__("os").environ.items() if k != "MUJOCO_GL"}
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith("NoOpenGL: no OpenGL for MuJoCo"), run.stdout


def test_a_plain_install_carries_the_data_folders(tmp_path: Path) -> None:
    """`pip install .` (a wheel, not editable) finds the built-in scenes, policies, grids
    and eval configs: setup.py's build hook puts the root's data folders into the wheel as
    metasim/_data, and metasim.paths reads them there when no checkout is beside the
    package; the reference venvs then go under the user cache, not into site-packages."""
    import shutil
    import zipfile

    from metasim.paths import DATA_FOLDERS

    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("metasim", *DATA_FOLDERS):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    build = subprocess.run(
        [*pip, "-w", str(tmp_path / "dist"), str(src)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    want = {
        "metasim/_data/" + p.relative_to(ROOT).as_posix()
        for name in DATA_FOLDERS
        for p in (ROOT / name).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert want and want <= names, sorted(want - names)[:5]
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import metasim, metasim.paths as p; "
        "print(metasim.__file__, p.SCENES, (p.SCENES / 'lift_cube.yaml').is_file(), "
        "(p.EVAL / 'config.yaml').is_file(), p.project_cache('libero-ref'))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("METASIM_ROOT", "METASIM_CACHE")}
    env |= {"PYTHONPATH": str(site), "METASIM_CACHE": str(tmp_path / "cache")}
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-2000:]
    package, scenes, scene_there, eval_there, venv = run.stdout.split()
    assert package.startswith(str(site)) and scenes == str(site / "metasim" / "_data" / "scenes")
    assert scene_there == eval_there == "True"
    assert venv == str(tmp_path / "cache" / "libero-ref")
