"""LIBERO's goal predicates (resting_on, site_on, site_in, joint_value): each pure function
alone on hand-made arrays, then each compiled kind on a real MuJoCo state."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from metasim.libero.kinds.predicates import (
    joint_value,
    resting_on,
    site_in,
    site_on,
)
from metasim.robosuite.success import task_view
from metasim.scene.compile import compile_scene
from metasim.scene.schema import Scene
from metasim.tasks.predicates import TaskView, compile_predicate

EYE = np.eye(3)[None]


def test_resting_on_needs_order_touch_and_alignment() -> None:
    a = np.array([[0.0, 0.0, 0.1]] * 4)
    b = np.array([[0.0, 0.0, 0.05], [0.0, 0.0, 0.05], [0.0, 0.0, 0.15], [0.04, 0.0, 0.05]])
    touch = np.array([True, False, True, True])
    assert resting_on(a, b, touch).tolist() == [True, False, False, False]
    assert resting_on(a[:1], b[:1], touch[:1], xy_radius=0.001).tolist() == [True]


def test_site_on_is_a_slab_above_the_site() -> None:
    size = np.array([0.1, 0.05, 0.01])
    site = np.zeros((5, 3))
    obj = np.array(
        [[0, 0, 0.02], [0, 0, 0.006], [0, 0, 0.12], [0.11, 0, 0.02], [0, 0.049, 0.1]],
        dtype=float,
    )
    got = site_on(site, np.repeat(EYE, 5, axis=0), size, obj)
    assert got.tolist() == [True, True, False, False, True]
    # LIBERO writes `mat @ (p - site)`: a site turned 90 deg about z swaps the x-y extents.
    rot = np.array([[[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]])
    assert site_on(site[:1], rot, size, np.array([[0.0, 0.09, 0.02]])).tolist() == [True]
    assert site_on(site[:1], EYE, size, np.array([[0.0, 0.09, 0.02]])).tolist() == [False]


def test_site_in_is_the_rotated_box_lowered_by_1cm() -> None:
    size = np.array([0.1, 0.05, 0.02])
    site = np.array([[1.0, 1.0, 1.0]] * 4)
    obj = site + np.array([[0, 0, 0], [0, 0, -0.029], [0, 0, -0.031], [0.0, 0.06, 0.0]])
    got = site_in(site, np.repeat(EYE, 4, axis=0), size, obj)
    assert got.tolist() == [True, True, False, False]
    assert site_in(site[:1], EYE, size, obj[2:3], z_slack=0.02).tolist() == [True]


def test_joint_value_bounds() -> None:
    q = np.array([-0.2, -0.14, 0.0, 0.5])
    assert joint_value(q, None, -0.14, False).tolist() == [True, False, False, False]
    assert joint_value(q, 0.5, None, True).tolist() == [False, False, False, True]
    assert joint_value(q, -0.15, 0.1, False).tolist() == [False, True, True, False]


SCENE = {
    "name": "libero_predicates",
    "fixtures": [
        {"type": "table", "name": "table"},
        {"type": "drawer", "name": "cab", "pos": [0.8, -0.2, 0.0]},
    ],
    "objects": [
        {"name": "a", "shape": "box", "size": [0.02, 0.02, 0.02], "pos": [0.5, 0.0, 0.02]},
        {"name": "b", "shape": "box", "size": [0.02, 0.02, 0.02], "pos": [0.4, 0.0, 0.02]},
    ],
    "task": {"instruction": "x", "success": {"lifted": {"object": "a", "height": 0.1}}},
}


@pytest.fixture(scope="module")
def world() -> tuple:
    compiled = compile_scene(Scene.model_validate(SCENE))
    return compiled, mujoco.MjData(compiled.model)


def _view(compiled, data: mujoco.MjData, **pos: tuple[float, float, float]) -> TaskView:
    m = compiled.model
    data.qpos[:] = m.qpos0
    data.qpos[compiled.index.arm_qpos] = compiled.index.home
    for name, p in pos.items():
        adr = m.jnt_qposadr[m.joint(f"{name}/free").id]
        data.qpos[adr : adr + 3] = p
        data.qpos[adr + 3 : adr + 7] = (1, 0, 0, 0)
    mujoco.mj_forward(m, data)
    return task_view(data)


def _check(compiled, tree: dict, view: TaskView) -> bool:
    node = Scene.model_validate({**SCENE, "task": {"instruction": "x", "success": tree}})
    return bool(compile_predicate(node.task.success, compiled)(view)[0])


def test_compiled_resting_on_reads_contacts(world) -> None:
    compiled, data = world
    tree = {"resting_on": {"object": "a", "support": "b"}}
    stacked = _view(compiled, data, a=(0.4, 0.0, 0.0599), b=(0.4, 0.0, 0.02))
    hovering = _view(compiled, data, a=(0.4, 0.0, 0.09), b=(0.4, 0.0, 0.02))
    apart = _view(compiled, data, a=(0.5, 0.0, 0.02), b=(0.4, 0.0, 0.02))
    assert _check(compiled, tree, stacked)
    assert not _check(compiled, tree, hovering)
    assert not _check(compiled, tree, apart)
    with pytest.raises(ValueError, match="contacts"):
        compile_predicate(
            Scene.model_validate(
                {**SCENE, "task": {"instruction": "x", "success": tree}}
            ).task.success,
            compiled,
        )(TaskView(stacked.kin, stacked.init_body_pos))


def test_compiled_site_kinds_and_joint_value(world) -> None:
    compiled, data = world
    m = compiled.model
    inside = _view(compiled, data)
    site = inside.kin.site_pos[0, compiled.index.sites["cab/inside"]]
    half = m.site_size[compiled.index.sites["cab/inside"]]
    at = _view(compiled, data, a=tuple(site))
    assert _check(compiled, {"site_in": {"object": "a", "site": "cab/inside"}}, at)
    assert not _check(compiled, {"site_in": {"object": "b", "site": "cab/inside"}}, at)
    above = _view(compiled, data, a=tuple(site + np.array([0.0, 0.0, half[2] + 0.05])))
    assert _check(compiled, {"site_on": {"object": "a", "site": "cab/inside"}}, above)
    assert not _check(compiled, {"site_on": {"object": "a", "site": "cab/inside"}}, at)
    slide = m.jnt_qposadr[m.joint("cab/slide").id]
    data.qpos[slide] = 0.15
    opened = TaskView(at.kin, at.init_body_pos, at.contacts)
    opened.kin.qpos[0, slide] = 0.15
    assert _check(compiled, {"joint_value": {"joint": "cab/slide", "above": 0.1}}, opened)
    assert not _check(compiled, {"joint_value": {"joint": "cab/slide", "below": 0.1}}, opened)


def test_joint_value_needs_a_bound() -> None:
    with pytest.raises(ValueError, match="joint_value needs"):
        Scene.model_validate(
            {**SCENE, "task": {"instruction": "x", "success": {"joint_value": {"joint": "j"}}}}
        )
