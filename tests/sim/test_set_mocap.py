"""`Handler.set_mocap`: mocap targets written into every env's state before the physics
substeps, on the native backend (fast) and on MuJoCo Warp's CPU device (slow), checked
against native MuJoCo with the mocap-driven test gripper (tests/data/mocap_robot)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.scene import compile_file
from metasim.scene.compile import CompiledScene
from metasim.sim import get_backend

SCENE = Path(__file__).resolve().parents[1] / "data/mocap_robot/scene.yaml"


@pytest.fixture(scope="module")
def mocap_scene() -> CompiledScene:
    return compile_file(SCENE)


def test_set_mocap_writes_the_state_and_moves_the_hand(mocap_scene):
    handler = get_backend("mujoco").launch(mocap_scene, 3, nthread=2)
    hand = mocap_scene.index.bodies["robot/hand"]
    mocap_body = mocap_scene.index.bodies["robot/mocap"]
    start = handler.get_state()
    pos = start.mocap_pos + np.array([0.0, 0.02, 0.01])[None, None] * np.arange(3)[:, None, None]
    quat = np.tile([0.0, 1.0, 0.0, 0.0], (3, 1, 1))
    handler.set_mocap(pos, quat)
    now = handler.get_state()
    np.testing.assert_array_equal(now.mocap_pos, pos)  # in the state at once
    np.testing.assert_array_equal(now.mocap_quat, quat)
    np.testing.assert_array_equal(now.qpos, start.qpos)  # nothing else changed
    for _ in range(40):
        handler.step(now.ctrl)
    kin = handler.kinematics()
    np.testing.assert_array_equal(kin.body_pos[:, mocap_body], pos[:, 0])
    np.testing.assert_allclose(kin.body_pos[:, hand], pos[:, 0], atol=1e-3)  # the weld pulls


def test_set_mocap_by_id_keeps_the_orientation(mocap_scene):
    handler = get_backend("mujoco").launch(mocap_scene, 2, nthread=1)
    before = handler.get_state()
    handler.set_mocap(np.full((2, 1, 3), 0.3), mocap_ids=[0])
    after = handler.get_state()
    np.testing.assert_array_equal(after.mocap_pos, np.full((2, 1, 3), 0.3))
    np.testing.assert_array_equal(after.mocap_quat, before.mocap_quat)


def test_set_mocap_refuses_bad_shapes_and_ids(mocap_scene):
    handler = get_backend("mujoco").launch(mocap_scene, 2, nthread=1)
    with pytest.raises(ValueError, match=r"mocap pos must be \(2, 1, 3\)"):
        handler.set_mocap(np.zeros((1, 1, 3)))
    with pytest.raises(ValueError, match=r"mocap quat must be \(2, 1, 4\)"):
        handler.set_mocap(np.zeros((2, 1, 3)), np.zeros((2, 1, 3)))
    with pytest.raises(ValueError, match=r"mocap ids must be in \[0, 1\)"):
        handler.set_mocap(np.zeros((2, 1, 3)), mocap_ids=[1])


@pytest.mark.slow
def test_warp_mocap_delta_matches_native(mocap_scene):
    """MuJoCo Warp (float32, CPU device) follows the same mocap targets: over 10 control
    steps of random mocap_delta actions (2 envs), mocap targets, hand positions and
    joints agree with native MuJoCo within 1e-6 (measured: 7e-8 after 30 steps)."""
    pytest.importorskip("mujoco_warp", reason="the warp extra is not installed")

    def env(backend: str) -> MetasimVectorEnv:
        e = MetasimVectorEnv(
            mocap_scene, 2, backend=backend, action_space="mocap_delta", autoreset=False
        )
        e.reset(seed=0)
        return e

    warp, native = env("warp"), env("mujoco")
    hand = mocap_scene.index.bodies["robot/hand"]
    start = native.handler.get_state().mocap_pos
    rng = np.random.default_rng(3)
    for _ in range(10):
        a = rng.uniform(-1.5, 1.5, (2, 4))
        warp.step(a)
        native.step(a)
        w, n = warp.handler.get_state(), native.handler.get_state()
        np.testing.assert_allclose(w.mocap_pos, n.mocap_pos, atol=1e-6)
        np.testing.assert_allclose(w.qpos, n.qpos, atol=1e-6)
        np.testing.assert_allclose(
            warp.handler.kinematics().body_pos[:, hand],
            native.handler.kinematics().body_pos[:, hand],
            atol=1e-6,
        )
    assert np.abs(w.mocap_pos - start).max() > 0.02  # the targets moved
