"""Success predicates on states placed by hand (no stepping): each kind, and the tree."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.scene.compile import compile_scene
from metasim.scene.schema import Scene
from metasim.sim import get_backend
from metasim.tasks.predicates import TaskView, compile_predicate

SCENE = {
    "name": "predicates",
    "fixtures": [
        {"type": "table", "name": "table"},
        {"type": "bin", "name": "bin", "pos": [0.5, 0.3, 0.0]},
        {"type": "drawer", "name": "cab", "pos": [0.8, -0.2, 0.0]},
    ],
    "objects": [
        {"name": "a", "shape": "box", "size": [0.02, 0.02, 0.02], "pos": [0.5, 0.0, 0.02]},
        {"name": "b", "shape": "box", "size": [0.02, 0.02, 0.02], "pos": [0.4, 0.0, 0.02]},
    ],
    "task": {"instruction": "x", "success": {"lifted": {"object": "a", "height": 0.1}}},
}


@pytest.fixture(scope="module")
def world():
    compiled = compile_scene(Scene.model_validate(SCENE))
    handler = get_backend("mujoco").launch(compiled, 1)
    state = handler.default_state(1)
    state.qpos[0, compiled.index.arm_qpos] = compiled.index.home
    handler.set_state(state)
    init = handler.kinematics().body_pos.copy()
    return compiled, handler, state, init


def _place(world, **objects):
    compiled, handler, state, init = world
    s = state.copy()
    for name, pos in objects.items():
        adr = compiled.index.object_qpos[compiled.index.object_names.index(name)]
        s.qpos[0, adr : adr + 3] = pos
    return s


def _holds(world, pred, state) -> bool:
    compiled, handler, _, init = world
    handler.set_state(state)
    fn = compile_predicate(
        Scene.model_validate({**SCENE, "task": {"instruction": "x", "success": pred}}).task.success,
        compiled,
    )
    return bool(fn(TaskView(handler.kinematics(), init))[0])


def test_lifted(world):
    lifted = {"lifted": {"object": "a", "height": 0.1}}
    assert not _holds(world, lifted, _place(world, a=[0.5, 0, 0.1]))
    assert _holds(world, lifted, _place(world, a=[0.5, 0, 0.15]))


def test_on(world):
    on = {"on": {"object": "a", "support": "b"}}
    assert _holds(world, on, _place(world, a=[0.4, 0.01, 0.06]))
    assert not _holds(world, on, _place(world, a=[0.4, 0.05, 0.06]))  # off to the side
    assert not _holds(world, on, _place(world, a=[0.4, 0.0, 0.12]))  # hovering


def test_in_region_world_and_body_frames(world):
    region = {
        "in_region": {
            "object": "a",
            "region": {"center": [0, 0, 0.04], "half_size": [0.08, 0.08, 0.04], "frame": "bin"},
        }
    }
    assert _holds(world, region, _place(world, a=[0.52, 0.28, 0.03]))
    assert not _holds(world, region, _place(world, a=[0.5, 0.0, 0.02]))
    world_region = {
        "in_region": {
            "object": "a",
            "region": {"center": [0.5, 0, 0.02], "half_size": [0.01, 0.01, 0.01]},
        }
    }
    assert _holds(world, world_region, _place(world, a=[0.505, 0, 0.02]))


def test_joint_fraction(world):
    compiled, *_ = world
    adr = compiled.index.joint_qpos[compiled.joint_ref("cab")]
    s = _place(world)
    s.qpos[0, adr] = 0.17  # travel 0.2 -> 85 % open
    assert _holds(world, {"joint_open": {"joint": "cab", "fraction": 0.8}}, s)
    assert not _holds(world, {"joint_closed": {"joint": "cab/slide", "fraction": 0.1}}, s)
    s.qpos[0, adr] = 0.01
    assert _holds(world, {"joint_closed": {"joint": "cab", "fraction": 0.1}}, s)


def test_grasped_needs_the_object_between_closed_fingers(world):
    compiled, handler, state, _ = world
    handler.set_state(state)
    site = handler.kinematics().site_pos[0, compiled.index.ee_site].copy()
    grasped = {"grasped": {"object": "a"}}
    s = _place(world, a=site)
    s.qpos[0, compiled.index.gripper_qpos] = 0.02  # pads 4 cm apart: touching a 4 cm cube
    assert _holds(world, grasped, s)
    s.qpos[0, compiled.index.gripper_qpos] = 0.04  # wide open: not holding
    assert not _holds(world, grasped, s)
    far = _place(world, a=site + np.array([0.0, 0.0, 0.2]))
    far.qpos[0, compiled.index.gripper_qpos] = 0.02
    assert not _holds(world, grasped, far)


def test_all_any_not(world):
    s = _place(world, a=[0.5, 0, 0.2])
    up = {"lifted": {"object": "a", "height": 0.1}}
    b_up = {"lifted": {"object": "b", "height": 0.1}}
    assert _holds(world, {"all": [up, {"not": b_up}]}, s)
    assert not _holds(world, {"all": [up, b_up]}, s)
    assert _holds(world, {"any": [b_up, up]}, s)
    assert not _holds(world, {"not": up}, s)
