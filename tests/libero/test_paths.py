"""metasim.libero.importer.paths finds LIBERO's files inside the installed `libero` extra
(and metasim.robosuite.importer.paths robosuite's Panda files, which the extra installs)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from metasim.errors import MetasimInputError
from metasim.libero.importer import paths
from metasim.robosuite.importer import paths as robosuite_paths


def test_five_suites_have_130_resource_complete_tasks() -> None:
    counts = {s: len(paths.suite_tasks(s)) for s in paths.LIBERO_SUITES}
    assert counts == {
        "libero_spatial": 10,
        "libero_object": 10,
        "libero_goal": 10,
        "libero_10": 10,
        "libero_90": 90,
    }
    assert all(paths.resource_complete(s) for s in paths.LIBERO_SUITES)
    # LIBERO's order: libero_goal task 0 is "open the middle drawer of the cabinet".
    assert paths.task_name("libero_goal", 0) == "open_the_middle_drawer_of_the_cabinet"


def test_files_of_a_task() -> None:
    bddl = paths.bddl_file("libero_goal", 0)
    assert "(:language" in bddl.read_text()
    states = paths.load_init_states("libero_goal", 0)
    assert states.shape == (50, 1 + 41 + 37) and states.dtype == np.float64
    assert (paths.assets_dir() / "scenes").is_dir()
    assert (robosuite_paths.panda_dir() / "meshes" / "link0.stl").is_file()
    assert robosuite_paths.panda_gripper_xml().is_file()


def test_bad_suite_and_task_are_input_errors() -> None:
    with pytest.raises(MetasimInputError, match="unknown suite 'libero_nine'"):
        paths.suite_tasks("libero_nine")
    with pytest.raises(MetasimInputError, match=r"out of range: libero_spatial has tasks 0\.\.9"):
        paths.bddl_file("libero_spatial", 10)


def test_missing_extra_names_the_install_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inject the fault 'robosuite is not installed': the error says how to install it."""
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "robosuite" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    robosuite_paths.robosuite_assets_dir.cache_clear()
    try:
        with pytest.raises(MetasimInputError) as err:
            robosuite_paths.panda_dir()
        assert "robosuite==1.4.0 is not installed" in str(err.value)
        assert "scripts/install_libero.sh" in str(err.value)
    finally:
        robosuite_paths.robosuite_assets_dir.cache_clear()
