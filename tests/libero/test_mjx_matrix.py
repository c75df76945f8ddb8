"""The MJX matrix of LIBERO tasks: the classifier's blocking pairs are really in the model
and really stop `mjx.put_model`; a loading task really loads through the backend's path;
docs/support_matrix.md agrees with the classifier for these tasks.

The jitted step (minutes to compile, if at all) is in the `slow` lane.
"""

from __future__ import annotations

import re
import warnings

import mujoco
import pytest

pytest.importorskip("jax", reason="the mjx extra (jax, mujoco-mjx) is not installed")

from mujoco import mjx

from metasim.errors import MetasimInputError
from metasim.libero.checks import mjx_matrix as mm
from metasim.libero.importer import paths
from metasim.paths import ROOT
from metasim.robosuite.importer.paths import robosuite_assets_dir
from metasim.sim.base import UnsupportedScene
from metasim.sim.mjx import support

try:
    paths.libero_root(), paths.assets_dir(), robosuite_assets_dir()
except MetasimInputError as exc:
    pytest.skip(f"the libero extra is not installed: {exc}", allow_module_level=True)

DOC = ROOT / "docs/support_matrix.md"
LOADING = ("libero_object", 0)  # no cylinder: loads as imported
WITH_STAND_IN = ("libero_goal", 0)  # the mount's cylinder pedestal needs a stand-in
AFTER_PUT_MODEL = {mm.LOADS, mm.STEPS, mm.STEP_TIMEOUT, mm.STEP_ERROR}


def doc_rows() -> dict[tuple[str, int], list[str]]:
    """(suite, index) -> the cells of that task's row in the doc's generated table."""
    text = DOC.read_text()
    section = text.split("<!-- libero-mjx-matrix:start -->")[1].split("<!-- libero-mjx")[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[1].isdigit():
            rows[(cells[0], int(cells[1]))] = cells
    return rows


def test_doc_lists_all_130_tasks() -> None:
    rows = doc_rows()
    expected = {(s, i) for s in paths.LIBERO_SUITES for i in range(len(paths.suite_tasks(s)))}
    assert set(rows) == expected
    assert all(r[3] in mm.STATUSES for r in rows.values())


@pytest.mark.slow
@pytest.mark.parametrize("task", [LOADING, WITH_STAND_IN])
def test_a_loading_task_loads_through_the_backends_path(task: tuple[str, int]) -> None:
    row = mm.classify(*task)
    assert row.status == mm.LOADS, row.other
    assert not row.blocking and not row.other
    assert sum(row.pair_types.values()) == row.geom_pairs > 0
    assert row.put_model_s is not None and row.max_contacts and row.max_contacts > 0
    _, compiled = mm.compile_task(*task)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mx, phys = support.put_model(compiled)  # what BackendHandler calls at launch
    assert mx.ngeom == compiled.model.ngeom
    assert [s.label for s in phys.stand_ins] == row.stand_ins
    assert bool(row.stand_ins) == (task == WITH_STAND_IN)
    # The doc's row says the same (a step may have been tried on it after put_model).
    doc = doc_rows()[task]
    assert doc[3] in AFTER_PUT_MODEL and int(doc[5]) == row.geom_pairs


def test_blocked_pairs_are_in_the_model_and_stop_put_model() -> None:
    """Without stand-ins (launch's cylinder_sides=0), the pedestal's cylinder blocks."""
    row = mm.classify(*WITH_STAND_IN, cylinder_sides=0)
    assert row.status == mm.BLOCKED
    assert set(row.blocking) == {"cylinder/box", "cylinder/mesh"}
    _, compiled = mm.compile_task(*WITH_STAND_IN)
    m = compiled.model
    present = {mm.type_name(t) for t in m.geom_type}
    for key, example in row.examples.items():
        assert set(key.split("/")) <= present
        # The example names two real geoms of those types.
        labels = re.findall(r"geom (\S+) \((\w+), body", example)
        assert sorted(t for _, t in labels) == sorted(key.split("/"))
        for name, kind in labels:
            if not name.startswith("#"):
                assert mm.type_name(m.geom_type[m.geom(name).id]) == kind
    assert_put_model_refuses(row, m)
    with pytest.raises(UnsupportedScene, match="no collision function"):
        support.put_model(compiled, cylinder_sides=0)


@pytest.mark.slow
def test_doc_blocked_rows_name_real_pairs() -> None:
    """The first blocked task of the doc: the classifier names the same type pairs with the
    same counts, and `mjx.put_model` really refuses its model."""
    blocked = [(k, r) for k, r in doc_rows().items() if r[3] == mm.BLOCKED]
    if not blocked:
        pytest.skip("no LIBERO task is blocked by the static check")
    (suite, index), cells = blocked[0]
    row = mm.classify(suite, index)
    assert row.status == mm.BLOCKED
    named = dict(item.rsplit(" ×", 1) for item in cells[4].split(", "))
    assert {k: int(v) for k, v in named.items()} == row.blocking
    _, compiled = mm.compile_task(suite, index)
    assert_put_model_refuses(row, support.physics_model(compiled).model)


def assert_put_model_refuses(row: mm.TaskRow, m: mujoco.MjModel) -> None:
    """`mjx.put_model(m)` raises, naming a geom-type pair that `row.blocking` lists."""
    with pytest.raises(NotImplementedError) as info:
        mjx.put_model(m, impl="jax")
    message = str(info.value)
    found = re.findall(r"mjGEOM_(\w+)", message)
    key = "/".join(sorted(found, key=lambda t: int(getattr(mujoco.mjtGeom, f"mjGEOM_{t}")))).lower()
    if "margin/gap not implemented" in message:
        key += " margin"
    else:
        assert "collisions not implemented" in message
    assert key in row.blocking, (message, row.blocking)


def test_step_bound_kills_a_compile_that_does_not_finish() -> None:
    """A bound too short for anything: the child is killed and nothing is claimed."""
    out = mm.step_bounded(*LOADING, timeout_s=2.0)
    assert out.status == mm.STEP_TIMEOUT and out.compile_s is None and out.run_s is None


@pytest.mark.slow
def test_one_jitted_step_traces_then_steps_or_times_out() -> None:
    """The bounded step end to end: the child traces, and either compiles and steps to a
    finite state or is stopped by the bound (the doc reports which)."""
    out = mm.step_bounded(*LOADING, timeout_s=1800.0)
    assert out.trace_s is not None and out.trace_s > 0, out
    if out.status == mm.STEPS:
        assert out.compile_s is not None and out.run_s is not None
    else:
        assert out.status == mm.STEP_TIMEOUT, out.error
