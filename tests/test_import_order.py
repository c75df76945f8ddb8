"""Any metasim package, and the modules tests and scripts import first, can be the first
metasim module a fresh interpreter imports. Registries are read lazily and the plug-ins
(LIBERO) import core modules back, so a core module that loaded the plug-ins while
another core module was half imported would fail with "partially initialized module"
(it did: `metasim.envs` registering gym ids at import, reached from
`metasim.policies.base`). Each module is imported in a forked child of an interpreter
that has only the third-party packages loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import metasim

pytestmark = pytest.mark.slow

ROOT = Path(metasim.__file__).resolve().parent
FIRST = [
    "metasim.policies.base",
    "metasim.evaluate.config",
    "metasim.evaluate.runner",
    "metasim.perturb.axes",
    "metasim.scene.sources",
    "metasim.envs.vec_env",
    "metasim.cli.main",
]
CHILD = """
import importlib, os, sys
import gymnasium, mujoco, numpy, pydantic, yaml  # third-party only, before forking
bad = []
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
            import gymnasium as gym
            from metasim.scene.sources import all_suites
            all_suites()  # a registry read: the plug-ins load, their gym ids follow
            import metasim.envs
            assert "metasim/lift_cube-v0" in gym.registry
        except BaseException as exc:
            sys.stderr.write(f"{name}: {type(exc).__name__}: {exc}\\n")
            os._exit(1)
        os._exit(0)
    if os.waitpid(pid, 0)[1]:
        bad.append(name)
sys.exit(1 if bad else 0)
"""


def packages() -> list[str]:
    """Every package of metasim (its `__init__` runs first on any import under it)."""
    return sorted(
        ".".join(p.parent.relative_to(ROOT.parent).parts) for p in ROOT.rglob("__init__.py")
    )


def test_every_package_and_the_usual_first_imports_import_first():
    names = packages() + FIRST
    run = subprocess.run(
        [sys.executable, "-c", CHILD, *names], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
