"""The observation terms read what they name from the kinematics, on every built-in scene."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.rotations import mat_to_quat
from tests.conftest import SCENE_FILES


def _same_rotation(a: np.ndarray, b: np.ndarray) -> float:
    """Largest difference between quaternions up to sign (q and -q are one rotation)."""
    return float(np.minimum(np.abs(a - b).max(-1), np.abs(a + b).max(-1)).max())


@pytest.mark.parametrize("path", SCENE_FILES, ids=lambda p: p.stem)
def test_terms_read_the_kinematics(path):
    env = MetasimVectorEnv(path, num_envs=3, seed=1)
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    low, high = env.single_action_space.low, env.single_action_space.high
    for _ in range(8):
        obs, *_ = env.step(rng.uniform(low, high, size=(3, len(low))))
    kin, idx, lay = env.handler.kinematics(), env.compiled.index, env.layout
    pol, priv = obs["policy"], obs["privileged"]
    np.testing.assert_array_equal(pol["joint_pos"], kin.qpos[:, idx.arm_qpos])
    np.testing.assert_array_equal(pol["joint_vel"], kin.qvel[:, idx.arm_dof])
    np.testing.assert_array_equal(pol["ee_pos"], kin.site_pos[:, idx.ee_site])
    np.testing.assert_array_equal(pol["hand_quat"], kin.body_quat[:, idx.hand_body])
    np.testing.assert_array_equal(pol["gripper_qpos"], kin.qpos[:, idx.gripper_qpos])
    np.testing.assert_array_equal(priv["object_pos"], kin.body_pos[:, idx.object_body])
    np.testing.assert_array_equal(priv["object_quat"], kin.body_quat[:, idx.object_body])
    np.testing.assert_array_equal(priv["fixture_qpos"], kin.qpos[:, idx.joint_qpos])
    np.testing.assert_array_equal(priv["fixture_body_pos"], kin.body_pos[:, lay.fixture_body_ids])
    np.testing.assert_array_equal(priv["fixture_site_pos"], kin.site_pos[:, lay.fixture_site_ids])
    # the grasp site's orientation: from the site's rotation matrix, w >= 0
    assert _same_rotation(pol["ee_quat"], mat_to_quat(kin.site_mat[:, idx.ee_site])) < 1e-12
    assert (pol["ee_quat"][:, 0] >= 0).all()
    grip = env.compiled.robot.gripper
    assert grip is not None
    opening = np.abs(kin.qpos[:, idx.gripper_qpos]).sum(axis=1, keepdims=True) / grip.max_width
    np.testing.assert_allclose(pol["gripper"], np.clip(opening, 0, 1), atol=1e-15)
    assert env.observation_space.contains(obs)
    # observations are copies: changing them leaves the simulator's buffers alone
    before = kin.qpos.copy()
    pol["joint_pos"][:] = 99.0
    priv["fixture_qpos"][:] = 99.0
    np.testing.assert_array_equal(env.handler.kinematics().qpos, before)
    env.close()
