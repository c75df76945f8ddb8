"""The test lanes (tests/lanes.py): every test of the whole suite carries the lane marker
its fixtures need, and the checks themselves catch a test that does not (a fixture that
needs a lane, a process of a reference venv or `lerobot-train` started from a test body, a
benchmark sweep left in the fast lane), run on throwaway test files in a pytest of their
own with this suite's conftest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import lanes

ROOT = Path(__file__).resolve().parents[1]


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A pytest of its own in `folder`, whose conftest is this suite's (hooks and guard)."""
    (folder / "conftest.py").write_text('pytest_plugins = ["tests.conftest"]\n')
    (folder / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n" + "".join(f"    {lane}: lane\n" for lane in lanes.LANES)
    )
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "MUJOCO_GL": "egl"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:dash", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow  # collects all ~2,800 tests (~20 s); every lane's run checks its own
def test_the_whole_suite_is_in_its_lanes() -> None:
    """Every test of every lane collected at once (`-m ""`): no lane problem."""
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "", "-n", "0"]
    out = subprocess.run(
        [*argv, "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "tests missing their lane marker" not in out.stderr


def test_plain_pytest_runs_the_fast_lane() -> None:
    """pyproject's addopts deselects every other lane: `pytest` alone is the fast lane."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    assert f'-m "{lanes.FAST}"' in config["ini_options"]["addopts"]
    declared = {m.split(":", 1)[0] for m in config["ini_options"]["markers"]}
    assert declared == set(lanes.LANES)


def test_a_fixture_that_needs_a_lane_is_refused_on_an_unmarked_test(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "from tests.lanes import needs\n\n"
        "@pytest.fixture\n"
        "@needs('reference')\n"
        "def venv():\n"
        "    return 1\n\n"
        "def test_unmarked(venv):\n"
        "    pass\n\n"
        "@pytest.mark.reference\n"
        "def test_marked(venv):\n"
        "    pass\n"
    )
    out = _pytest(tmp_path, "--collect-only")
    assert out.returncode != 0
    assert "test_x.py::test_unmarked uses fixture 'venv'" in out.stderr
    assert "test_marked" not in out.stderr
    (tmp_path / "test_x.py").write_text(
        (tmp_path / "test_x.py").read_text().replace("def test_unmarked(venv)", "def t(venv)")
    )
    assert _pytest(tmp_path, "--collect-only").returncode == 0


def test_a_reference_process_or_training_from_an_unmarked_test_fails_it(tmp_path: Path) -> None:
    (tmp_path / "test_y.py").write_text(
        "import subprocess, pytest\n\n"
        "def _start(what):\n"
        "    try:\n"
        "        subprocess.run(what, capture_output=True)\n"
        "    except FileNotFoundError:\n"
        "        pass  # not built here: the guard spoke before or not at all\n\n"
        "def test_unmarked_reference():\n"
        "    _start(['.cache/libero-ref/bin/python', '-c', 'pass'])\n\n"
        "@pytest.mark.reference\n"
        "def test_marked_reference():\n"
        "    _start(['.cache/libero-ref/bin/python', '-c', 'pass'])\n\n"
        "def test_unmarked_training():\n"
        "    _start(['lerobot-train', '--help'])\n\n"
        "@pytest.mark.learned\n"
        "def test_marked_training():\n"
        "    _start(['lerobot-train', '--help'])\n\n"
        "def test_a_plain_process():\n"
        "    subprocess.run(['true'], check=True)\n\n"
        "def test_unmarked_reference_caught_and_skipped():\n"
        "    try:\n"
        "        _start(['.cache/metaworld-ref/bin/python', '-c', 'pass'])\n"
        "    except RuntimeError:\n"
        "        pytest.skip('as if the package were missing')\n"
    )
    out = _pytest(tmp_path, "-m", "", "-rA")
    assert "3 failed, 3 passed" in out.stdout, out.stdout[-3000:]
    assert "test_unmarked_reference_caught_and_skipped started a process" in out.stdout
    assert "test_unmarked_reference started a process of the 'reference' lane" in out.stdout
    assert "test_unmarked_training started a process of the 'learned' lane" in out.stdout


def test_a_benchmark_sweep_left_in_the_fast_lane_is_refused(tmp_path: Path) -> None:
    tasks = sorted(t for t in lanes.task_names() if t.startswith("libero:"))[:20]
    if len(tasks) <= lanes.MAX_TASK_CASES:
        pytest.skip("LIBERO is not installed here: fewer tasks than the bound")
    (tmp_path / "test_z.py").write_text(
        "import pytest\n"
        "from tests import lanes\n\n"
        f"TASKS = {tasks!r}\n\n"
        "@pytest.mark.parametrize('ref', TASKS)\n"
        "def test_all(ref):\n"
        "    pass\n\n"
        "@pytest.mark.parametrize('ref', lanes.sampled(TASKS, TASKS[:2]))\n"
        "def test_sampled(ref):\n"
        "    pass\n"
    )
    out = _pytest(tmp_path, "--collect-only")
    assert "test_z.py::test_all has 20 cases of benchmark tasks" in out.stderr
    assert "test_sampled" not in out.stderr
    ok = tmp_path / "test_z.py"
    ok.write_text(ok.read_text().replace("def test_all", "def _all"))
    fast = _pytest(tmp_path, "--collect-only", "-m", "not sweep")
    assert fast.returncode == 0 and "2/20 tests collected (18 deselected)" in fast.stdout


def test_shard_splits_the_selection_into_disjoint_parts(tmp_path: Path) -> None:
    (tmp_path / "test_s.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('i', range(10))\ndef test_i(i):\n    pass\n"
    )
    seen: list[str] = []
    for k in range(3):
        out = _pytest(tmp_path, "--collect-only", "--shard", f"{k}/3")
        assert out.returncode == 0, out.stderr
        seen += [line for line in out.stdout.splitlines() if line.startswith("test_s.py::")]
    assert sorted(seen) == sorted(f"test_s.py::test_i[{i}]" for i in range(10))
    bad = _pytest(tmp_path, "--collect-only", "--shard", "3/3")
    assert bad.returncode == 4 and "--shard '3/3': expected K/N" in bad.stderr
