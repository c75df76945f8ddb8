"""Action kinds are a registry: the built-in kinds are listed, an unknown one is refused
naming them, and a kind registered from outside the package drives an env through the
same `ActionController` (the extension point of docs/extending.md)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from metasim.control.action_kinds import ACTION_KINDS, ActionKindBase, register_action_kind
from metasim.control.actions import ActionController
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.sim.base import Kinematics


def test_builtin_kinds_are_registered():
    assert {"ee_delta", "joint_pos", "osc_pose", "mocap_delta"} <= set(ACTION_KINDS.names())


def test_unknown_kind_names_the_known_ones(lift_scene):
    with pytest.raises(ValueError, match=r"unknown action space 'ee_dleta'.*'ee_delta'"):
        ActionController(lift_scene, "ee_dleta")


class FingerOnly(ActionKindBase):
    """A throw-away kind: the arm holds its current ctrl, the action (B, 1) is the gripper
    opening in [0, 1]."""

    controls = ("position",)

    @property
    def dim(self) -> int:
        return 1

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(1), np.ones(1)

    def hold_action(self, kin: Kinematics) -> np.ndarray:
        return np.ones((kin.qpos.shape[0], 1))

    def to_ctrl(
        self, action: np.ndarray, kin: Kinematics, jac: np.ndarray, base_ctrl: np.ndarray
    ) -> np.ndarray:
        grip = self.compiled.robot.gripper
        assert grip is not None
        ctrl = base_ctrl.copy()
        ctrl[:, self.index.gripper_act] = grip.closed_ctrl + action[:, 0] * (
            grip.open_ctrl - grip.closed_ctrl
        )
        return ctrl


@pytest.fixture
def finger_only() -> Iterator[str]:
    register_action_kind("test_finger_only")(FingerOnly)
    yield "test_finger_only"
    ACTION_KINDS.unregister("test_finger_only")


def test_a_kind_registered_from_outside_drives_an_env(lift_scene, finger_only):
    env = MetasimVectorEnv(lift_scene, num_envs=2, action_space=finger_only)
    env.reset(seed=0)
    assert env.action_space.shape == (2, 1)
    arm = env.handler.kinematics().qpos[:, lift_scene.index.arm_qpos].copy()
    for _ in range(15):
        obs, *_ = env.step(np.array([[1.0], [0.0]]))
    opening = obs["policy"]["gripper"][:, 0]
    assert opening[0] > 0.95 and opening[1] < 0.05
    np.testing.assert_allclose(obs["policy"]["joint_pos"], arm, atol=0.02)  # the arm held
    with pytest.raises(ValueError, match="settle steps need a delta action space"):
        env.controller.settle_action(2)
