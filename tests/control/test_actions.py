"""Action spaces: EEF deltas move the end effector as commanded (differential IK), joint
targets are tracked, and the gripper follows the declared convention (1 = open)."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.control.actions import GRIPPER, ActionController
from metasim.control.ik import dls_step
from metasim.envs.vec_env import MetasimVectorEnv


def test_dls_step_solves_a_square_system():
    rng = np.random.default_rng(0)
    jac = rng.normal(size=(4, 6, 6))
    dq_true = rng.normal(size=(4, 6)) * 0.01
    err = np.einsum("bij,bj->bi", jac, dq_true)
    dq = dls_step(jac, err, damping=1e-6)
    np.testing.assert_allclose(dq, dq_true, atol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_ee_delta_moves_the_end_effector(lift_scene, axis):
    env = MetasimVectorEnv(lift_scene, num_envs=1)
    obs, _ = env.reset(seed=0)
    start = obs["policy"]["ee_pos"][0].copy()
    action = np.zeros((1, 7))
    action[0, axis] = 0.01
    action[0, 6] = 1.0
    for _ in range(10):
        obs, *_ = env.step(action)
    action[0, :6] = 0.0
    for _ in range(10):  # let the actuators settle on the integrated target
        obs, *_ = env.step(action)
    moved = obs["policy"]["ee_pos"][0] - start
    assert moved[axis] == pytest.approx(0.1, abs=0.02)
    others = [i for i in range(3) if i != axis]
    assert np.all(np.abs(moved[others]) < 0.01)


def test_ee_delta_rotation_about_z(lift_scene):
    from metasim.rotations import quat_to_mat, yaw_of

    env = MetasimVectorEnv(lift_scene, num_envs=1)
    obs, _ = env.reset(seed=0)
    yaw0 = yaw_of(quat_to_mat(obs["policy"]["ee_quat"]))[0]
    action = np.zeros((1, 7))
    action[0, 5] = 0.05
    action[0, 6] = 1.0
    for _ in range(8):
        obs, *_ = env.step(action)
    action[0, 5] = 0.0
    for _ in range(10):
        obs, *_ = env.step(action)
    yaw1 = yaw_of(quat_to_mat(obs["policy"]["ee_quat"]))[0]
    assert yaw1 - yaw0 == pytest.approx(0.4, abs=0.06)


def test_joint_targets_are_tracked(lift_scene):
    env = MetasimVectorEnv(lift_scene, num_envs=2, action_space="joint_pos")
    obs, _ = env.reset(seed=0)
    target = lift_scene.index.home + np.array([0.2, -0.1, 0.1, 0.2, 0.0, -0.1, 0.3])
    action = np.tile(np.append(target, 1.0), (2, 1))
    for _ in range(30):
        obs, *_ = env.step(action)
    np.testing.assert_allclose(obs["policy"]["joint_pos"], np.tile(target, (2, 1)), atol=0.01)


def test_gripper_convention(lift_scene):
    assert "1 = open" in GRIPPER
    env = MetasimVectorEnv(lift_scene, num_envs=2)
    env.reset(seed=0)
    action = np.zeros((2, 7))
    action[:, 6] = [1.0, 0.0]
    for _ in range(15):
        obs, *_ = env.step(action)
    opening = obs["policy"]["gripper"][:, 0]
    assert opening[0] > 0.95 and opening[1] < 0.05


def test_bad_actions_are_refused(lift_scene):
    ctl = ActionController(lift_scene, "ee_delta")
    env = MetasimVectorEnv(lift_scene, num_envs=1)
    kin = env.handler.kinematics()
    jac = env.handler.site_jacobian(lift_scene.index.ee_site)
    with pytest.raises(ValueError, match="must be"):
        ctl.to_ctrl(np.zeros((1, 5)), kin, jac, np.zeros((1, lift_scene.model.nu)))
    with pytest.raises(ValueError, match="NaN"):
        ctl.to_ctrl(np.full((1, 7), np.nan), kin, jac, np.zeros((1, lift_scene.model.nu)))
