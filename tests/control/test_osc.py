"""metasim.control.osc on robosuite's Panda arm (from the installed `libero` extra), without
the reference simulator: goal conventions, gravity compensation, gripper command, batching.
Parity against robosuite itself is tests/libero/test_osc_parity.py."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from metasim.control.osc import OscConfig, OscIndex, OscPose, arm_at, orientation_error, step_osc
from metasim.robosuite.importer import paths
from metasim.rotations import axis_angle_to_mat

HOME = np.array([0.0, -0.161, 0.0, -2.445, 0.0, 2.227, np.pi / 4])  # LIBERO's reset joints


@pytest.fixture(scope="module")
def panda() -> tuple[mujoco.MjModel, OscIndex]:
    spec = mujoco.MjSpec.from_file(str(paths.panda_dir() / "robot.xml"))
    spec.compiler.degree = False  # robosuite merges the arm into a world with angle="radian"
    spec.body("right_hand").add_site(name="grip", pos=[0, 0, 0.1])
    for i in range(7):  # as robosuite's Robot sets them when it builds the arm
        spec.joint(f"joint{i + 1}").armature = 5.0 / (i + 1)
        spec.joint(f"joint{i + 1}").frictionloss = 0.1
    model = spec.compile()
    joints = [f"joint{i}" for i in range(1, 8)]
    return model, OscIndex.from_model(model, "grip", joints)


def _start(model: mujoco.MjModel, index: OscIndex, b: int) -> tuple[list, OscPose]:
    datas = [mujoco.MjData(model) for _ in range(b)]
    for d in datas:
        d.qpos[:] = HOME
        mujoco.mj_forward(model, d)
    osc = OscPose(index, b)
    osc.reset(range(b), arm_at(model, index, np.tile(HOME, (b, 1))))
    return datas, osc


def test_orientation_error_is_the_rotation_vector_for_small_turns() -> None:
    r = axis_angle_to_mat(np.array([[0.1, -0.2, 0.3]]))
    goal = axis_angle_to_mat(np.array([[0.0, 0.0, 0.01]])) @ r
    assert np.allclose(orientation_error(r, r), 0.0)
    assert np.allclose(orientation_error(goal, r), [[0.0, 0.0, 0.01]], atol=1e-6)


def test_goal_is_relative_to_the_current_pose_in_the_world_frame(panda) -> None:
    model, index = panda
    datas, osc = _start(model, index, 1)
    arm = arm_at(model, index, HOME[None])
    osc.set_goal(np.array([[1.0, -0.5, 0.0, 0.0, 0.0, 1.0, 0.0]]), arm)
    assert np.allclose(osc.goal_pos, arm.ee_pos + np.array([0.05, -0.025, 0.0]))
    turn = axis_angle_to_mat(np.array([[0.0, 0.0, 0.5]]))
    assert np.allclose(osc.goal_ori, turn @ arm.ee_mat)  # applied on the left: world frame
    before = osc.goal_ori.copy()
    osc.set_goal(np.array([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]), arm)
    assert np.array_equal(osc.goal_ori, before)  # all-zero rotation keeps the old goal


def test_zero_action_holds_the_arm_against_gravity(panda) -> None:
    model, index = panda
    datas, osc = _start(model, index, 1)
    p0 = datas[0].site_xpos[index.site].copy()
    for _ in range(20):  # one second at 20 Hz, 25 substeps of 0.002 s
        step_osc(model, datas, osc, np.zeros((1, 7)), substeps=25)
    assert np.linalg.norm(datas[0].site_xpos[index.site] - p0) < 2e-3


def test_saturated_x_moves_a_few_centimetres_not_the_full_goal(panda) -> None:
    """Five saturated +x actions: each goal is 5 cm ahead, but the arm lags (LIBERO: ~4.4 cm
    over five steps)."""
    model, index = panda
    datas, osc = _start(model, index, 2)
    p0 = np.array([d.site_xpos[index.site] for d in datas])
    act = np.array([[1.0, 0, 0, 0, 0, 0, 0], [-1.0, 0, 0, 0, 0, 0, 0]])
    for _ in range(5):
        step_osc(model, datas, osc, act, substeps=25)
    move = np.array([d.site_xpos[index.site] for d in datas]) - p0
    assert 0.03 < move[0, 0] < 0.06 and -0.06 < move[1, 0] < -0.03
    assert np.abs(move[:, 1:]).max() < 0.015  # mostly along x


def test_batched_envs_match_single_envs(panda) -> None:
    model, index = panda
    rng = np.random.default_rng(0)
    acts = rng.uniform(-1, 1, size=(4, 3, 7))
    datas, osc = _start(model, index, 3)
    for a in acts:
        step_osc(model, datas, osc, a, substeps=25)
    for k in range(3):
        one, osc1 = _start(model, index, 1)
        for a in acts:
            step_osc(model, one, osc1, a[k : k + 1], substeps=25)
        assert np.allclose(one[0].qpos, datas[k].qpos, atol=1e-12)


def test_gripper_command_accumulates_per_substep() -> None:
    index = OscIndex(
        site=0,
        arm_qpos=np.zeros(0, dtype=np.int64),
        arm_dof=np.zeros(0, dtype=np.int64),
        arm_actuators=np.zeros(0, dtype=np.int64),
        torque_range=np.zeros((0, 2)),
        gripper_actuators=np.array([0, 1]),
        gripper_range=np.array([[0.0, 0.04], [-0.04, 0.0]]),
    )
    osc = OscPose(index, 1, OscConfig())
    osc.gripper_input[:] = 1.0  # close
    for _ in range(25):
        ctrl = osc.gripper_ctrl()
    assert np.allclose(osc.gripper, [[-0.25, 0.25]])
    assert np.allclose(ctrl, [[0.02 - 0.005, -0.02 + 0.005]])  # fingers move toward 0
    osc.gripper_input[:] = -1.0  # open
    for _ in range(200):
        ctrl = osc.gripper_ctrl()
    assert np.allclose(ctrl, [[0.04, -0.04]])  # saturated at fully open


def test_per_env_substeps_match_the_batched_step(panda) -> None:
    """`command` + `substep(env, k, ...)` (how a backend that steps envs one by one calls
    the controller) gives the batched `step_osc` trajectory (to rounding: 1e-12)."""
    model, index = panda
    acts = np.random.default_rng(1).uniform(-1, 1, size=(3, 2, 7))
    batched, osc_b = _start(model, index, 2)
    single, osc_s = _start(model, index, 2)
    for a in acts:
        step_osc(model, batched, osc_b, a, substeps=25)
        osc_s.command(a)
        for env in (1, 0):  # any order
            for k in range(25):
                mujoco.mj_step1(model, single[env])
                osc_s.substep(env, k, model, single[env])
                mujoco.mj_step2(model, single[env])
    for b, s in zip(batched, single, strict=True):
        assert np.allclose(b.qpos, s.qpos, atol=1e-12, rtol=0), np.abs(b.qpos - s.qpos).max()
