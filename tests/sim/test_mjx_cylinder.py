"""Cylinders on MJX: the convex-prism stand-in for pairs MJX has no collision function
for (cylinder against box or mesh), and the errors for pairs still unsupported.

The default run compiles no XLA program: it checks the stand-in model (geometry,
mass, inertia, layout), the planning of substitutions, and `put_model`'s warnings and
errors. The lift_cylinder expert run on MJX compiles the scene (1.5-3 min on 2 CPU
cores) and is in the `slow` lane.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("jax", reason="the mjx extra (jax, mujoco-mjx) is not installed")

import mujoco

from metasim.paths import SCENES
from metasim.scene import compile_file
from metasim.sim.mjx import support

CYL = int(mujoco.mjtGeom.mjGEOM_CYLINDER)
MESH = int(mujoco.mjtGeom.mjGEOM_MESH)

# An object MJX cannot collide with the box table even with stand-ins: an ellipsoid.
ELLIPSOID_XML = """\
<mujoco>
  <worldbody>
    <body name="egg">
      <geom name="shell" type="ellipsoid" size="0.02 0.02 0.03" mass="0.05"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module")
def cylinder_scene() -> Any:
    return compile_file(str(SCENES / "lift_cylinder.yaml"))


def _polygon_area(xy: np.ndarray) -> float:
    x, y = xy[:, 0], xy[:, 1]
    return 0.5 * abs(float(np.dot(x, np.roll(y, 1)) - np.dot(y, np.roll(x, 1))))


@pytest.mark.parametrize("sides", [8, 16, 20])
def test_prism_has_the_cylinders_height_area_and_volume(sides: int) -> None:
    r, h = 0.026, 0.05
    vert = support.cylinder_prism(r, h, sides)
    assert vert.shape == (2 * sides, 3)
    np.testing.assert_allclose(np.unique(vert[:, 2]), [-h, h])
    ring = vert[:sides, :2]
    assert _polygon_area(ring) == pytest.approx(math.pi * r * r, rel=1e-12)
    circum = np.hypot(ring[:, 0], ring[:, 1])
    inradius = circum[0] * math.cos(math.pi / sides)
    assert inradius < r < circum[0]
    if sides == support.CYLINDER_SIDES:  # the figures quoted in support.py
        assert 1 - inradius / r == pytest.approx(0.006, abs=5e-4)
        assert circum[0] / r - 1 == pytest.approx(0.013, abs=5e-4)
    with pytest.raises(ValueError, match="3 to 20 sides"):
        support.cylinder_prism(r, h, 21)


def test_lift_cylinder_gets_a_prism_stand_in(cylinder_scene: Any) -> None:
    m = cylinder_scene.model
    can = m.geom("can").id
    assert support.plan_stand_ins(m) == {can: [m.geom("table/top").id, 19, 21, 23]}
    phys = support.physics_model(cylinder_scene)
    out = phys.model
    assert [s.geom for s in phys.stand_ins] == [can]
    assert "16-sided convex prism" in phys.stand_ins[0].describe()
    assert "table/top" in phys.stand_ins[0].describe()
    # Only the can's collision shape changes; the native model still has the cylinder.
    assert int(out.geom_type[can]) == MESH and int(m.geom_type[can]) == CYL
    others = np.arange(m.ngeom) != can
    np.testing.assert_array_equal(out.geom_type[others], m.geom_type[others])
    for field in (
        "body_mass",
        "body_inertia",
        "body_ipos",
        "body_iquat",
        "body_invweight0",
        "dof_invweight0",
        "geom_friction",
        "geom_solref",
        "geom_solimp",
        "geom_condim",
        "geom_priority",
        "geom_pos",
    ):
        np.testing.assert_allclose(getattr(out, field), getattr(m, field), atol=1e-12)
    # The prism, in the geom frame: the cylinder's half-height, radius within 1.3%.
    mesh = int(out.geom_dataid[can])
    vert = out.mesh_vert[out.mesh_vertadr[mesh] : out.mesh_vertadr[mesh] + out.mesh_vertnum[mesh]]
    d = mujoco.MjData(out)
    mujoco.mj_forward(out, d)
    world = vert @ d.geom_xmat[can].reshape(3, 3).T + d.geom_xpos[can]
    np.testing.assert_allclose(world[:, 2].min(), 0.0, atol=1e-9)  # on the table top
    np.testing.assert_allclose(world[:, 2].max(), 0.1, atol=1e-9)
    radial = np.hypot(*(world[:, :2] - d.geom_xpos[can][:2]).T)
    np.testing.assert_allclose(radial, 0.026 * 1.0130, rtol=1e-3)
    assert support.unsupported(out, phys.stand_ins) == []


def test_put_model_warns_and_reports_the_stand_in(cylinder_scene: Any) -> None:
    with pytest.warns(support.StandInWarning, match=r"geom can \(cylinder.*prism"):
        mx, phys = support.put_model(cylinder_scene)
    assert [s.geom for s in phys.stand_ins] == [cylinder_scene.model.geom("can").id]
    assert int(mx.geom_type[phys.stand_ins[0].geom]) == MESH


def test_without_stand_ins_the_cylinder_is_refused(cylinder_scene: Any) -> None:
    with pytest.raises(
        ValueError,
        match=r"cannot run on MJX.*geom can \(cylinder, body can\) against geom table/top",
    ):
        support.put_model(cylinder_scene, cylinder_sides=0)


def test_scenes_without_cylinders_are_left_alone(lift_scene: Any) -> None:
    phys = support.physics_model(lift_scene)
    assert phys.model is lift_scene.model and phys.stand_ins == ()


def test_a_cylinder_touching_a_substituted_one_is_substituted_too() -> None:
    """MJX has cylinder-cylinder but no cylinder-mesh: once `a` (on the box) is a prism,
    `b` (touching only `a` and the floor) must become one as well."""
    m = mujoco.MjModel.from_xml_string("""
    <mujoco><worldbody>
      <geom name="floor" type="plane" size="1 1 0.1"/>
      <body name="c">
        <geom name="box" type="box" size="0.1 0.1 0.1" contype="2" conaffinity="2"/>
      </body>
      <body name="a"><freejoint/>
        <geom name="a" type="cylinder" size="0.02 0.05" contype="3" conaffinity="3"/>
      </body>
      <body name="b"><freejoint/><geom name="b" type="cylinder" size="0.02 0.05"/></body>
    </worldbody></mujoco>""")
    a, b, box = m.geom("a").id, m.geom("b").id, m.geom("box").id
    assert support.plan_stand_ins(m) == {a: [box, b], b: [a]}


def test_pairs_still_unsupported_are_refused(tmp_path: Path) -> None:
    """An ellipsoid on the box table: no MJX function, no stand-in; the error names it."""
    (tmp_path / "egg.xml").write_text(ELLIPSOID_XML)
    scene = (SCENES / "lift_cylinder.yaml").read_text()
    scene = scene.replace(
        "cameras:",
        "  - {name: egg, shape: mjcf, mjcf: egg.xml, pos: [0.4, 0.1, 0.03]}\ncameras:",
    )
    (tmp_path / "scene.yaml").write_text(scene)
    compiled = compile_file(str(tmp_path / "scene.yaml"))
    with pytest.raises(ValueError, match="cannot run on MJX") as err:
        support.put_model(compiled)
    msg = str(err.value)
    assert "ellipsoid, body egg" in msg and "table/top" in msg
    # The can's stand-in cannot touch the ellipsoid either: named as the prism it is.
    assert "cylinder as a 16-sided prism" in msg


@pytest.mark.slow
def test_expert_lifts_the_cylinder_on_mjx(tmp_path: Path) -> None:
    from metasim.cli.main import main

    out = tmp_path / "run"
    args = ["eval", "--quiet", "backend=mjx", "suite.tasks=[lift_cylinder]"]
    assert main([*args, "episodes=4", "num_envs=4", f"out={out}"]) == 0
    task = json.loads((out / "summary.json").read_text())["tasks"]["lift_cylinder"]
    assert task["successes"] == 4, task
