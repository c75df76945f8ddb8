"""Imported goals turn true when the state reaches them: from init state 0, a joint is
set or an object dropped onto its target and left to settle (the arm held still), then
LIBERO's goal holds; before that it did not."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from metasim.libero.importer import init_states as libero_init_states
from metasim.libero.importer import scene as libero_scene
from metasim.robosuite.success import goal_holds
from metasim.scene.compile import ROBOT_PREFIX, compile_scene


def _setup(ref: str) -> tuple:
    task = libero_scene.load_task(ref)
    compiled = compile_scene(task.scene)
    mapping = libero_init_states.init_state_map(task.problem, compiled)
    data = mujoco.MjData(compiled.model)
    mapping.apply(compiled.model, data, task.init_states[0])
    assert not goal_holds(compiled, data)
    return compiled, data


def _settle(compiled, data: mujoco.MjData, seconds: float = 0.6) -> None:
    """Step physics with the robot's joints held where they are."""
    m = compiled.model
    robot = [j for j in range(m.njnt) if m.joint(j).name.startswith(ROBOT_PREFIX)]
    qadr, vadr = m.jnt_qposadr[robot], m.jnt_dofadr[robot]
    hold = data.qpos[qadr].copy()
    for _ in range(int(seconds / m.opt.timestep)):
        data.qpos[qadr], data.qvel[vadr] = hold, 0.0
        mujoco.mj_step(m, data)
    mujoco.mj_forward(m, data)


def _drop(compiled, data: mujoco.MjData, obj: str, at: np.ndarray) -> None:
    m = compiled.model
    adr = m.jnt_qposadr[m.joint(f"{obj}/free").id]
    data.qpos[adr : adr + 3] = at
    data.qvel[m.jnt_dofadr[m.joint(f"{obj}/free").id] :][:6] = 0.0
    mujoco.mj_forward(m, data)


@pytest.mark.parametrize(
    ("ref", "joint", "value"),
    [
        ("libero:libero_goal/0", "wooden_cabinet_1_middle_level", -0.15),  # Open
        ("libero:libero_goal/7", "flat_stove_1_button", 1.0),  # TurnOn
    ],
)
def test_joint_goals(ref: str, joint: str, value: float) -> None:
    compiled, data = _setup(ref)
    data.qpos[compiled.model.jnt_qposadr[compiled.model.joint(joint).id]] = value
    mujoco.mj_forward(compiled.model, data)
    assert goal_holds(compiled, data)


@pytest.mark.parametrize(
    ("ref", "obj", "target", "kind"),
    [
        ("libero:libero_goal/8", "akita_black_bowl_1", "plate_1", "body"),  # On object
        ("libero:libero_goal/1", "akita_black_bowl_1", "flat_stove_1_cook_region", "site"),
        ("libero:libero_object/0", "alphabet_soup_1", "basket_1_contain_region", "site"),  # In
    ],
)
def test_dropping_onto_the_target_reaches_the_goal(
    ref: str, obj: str, target: str, kind: str
) -> None:
    compiled, data = _setup(ref)
    m = compiled.model
    above = data.xpos[m.body(target).id] if kind == "body" else data.site_xpos[m.site(target).id]
    _drop(compiled, data, obj, above + np.array([0.0, 0.0, 0.06]))
    _settle(compiled, data)
    assert goal_holds(compiled, data)
