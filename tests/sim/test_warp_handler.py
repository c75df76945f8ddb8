"""The MuJoCo Warp backend against native MuJoCo on Warp's CPU device: parity over control
steps with stated tolerances, subset resets, and per-world model edits.

MuJoCo Warp runs on the CPU (Warp compiles its kernels with LLVM on first use, about a
minute on a 2-core machine, then caches them under ~/.cache/warp), so CI runs this
without a GPU. One handler pair (lift_cube, 2 envs) serves the module.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("warp", reason="the warp extra (mujoco-warp, warp-lang) is not installed")
pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

from metasim.paths import SCENES
from metasim.scene import compile_file
from metasim.sim import ModelEdit, get_backend
from metasim.tasks.task import TaskRuntime

# MuJoCo Warp integrates in float32, native MuJoCo in float64. Measured on lift_cube over
# 100 control steps (2 envs, arm sweeping, gripper closing): worst joint error 1.3e-6
# rad, worst object error 1.3e-8 m. The tolerances leave ~100x of that for other
# machines' float rounding, and stay far below what a task predicate can notice.
JOINT_ATOL = 1e-4  # rad (or m for the finger slides), every joint, every step
OBJECT_ATOL = 1e-5  # m, object body positions, every step
PARITY_STEPS = 40

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pair() -> Any:
    compiled = compile_file(str(SCENES / "lift_cube.yaml"))
    warp_h = get_backend("warp").launch(compiled, 2, device="cpu")
    native = get_backend("mujoco").launch(compiled, 2)
    state = TaskRuntime(compiled).sample_initial(native.default_state(2), [0, 1])
    yield compiled, warp_h, native, state
    warp_h.close()
    native.close()


def test_runs_on_the_cpu_device(pair):
    _, warp_h, _, _ = pair
    assert warp_h.device == "cpu"


def test_parity_with_native_mujoco(pair):
    compiled, warp_h, native, state = pair
    warp_h.set_state(state)
    native.set_state(state)
    idx = compiled.index
    obj = idx.object_body
    joint_err = obj_err = 0.0
    moved = 0.0
    for k in range(PARITY_STEPS):
        ctrl = state.ctrl.copy()
        ctrl[:, idx.arm_act] += 0.04 * (np.sin(0.05 * k + np.arange(len(idx.arm_act))))
        if k >= PARITY_STEPS // 2:
            ctrl[:, idx.gripper_act] = 0.0
        warp_h.step(ctrl)
        native.step(ctrl)
        a, b = warp_h.kinematics(), native.kinematics()
        joint_err = max(joint_err, float(np.abs(a.qpos - b.qpos).max()))
        obj_err = max(obj_err, float(np.abs(a.body_pos[:, obj] - b.body_pos[:, obj]).max()))
        moved = max(
            moved, float(np.abs(b.qpos[:, idx.arm_qpos] - state.qpos[:, idx.arm_qpos]).max())
        )
    assert moved > 0.01  # the comparison covers motion, not a resting arm
    assert joint_err < JOINT_ATOL, joint_err
    assert obj_err < OBJECT_ATOL, obj_err
    jac_w = warp_h.site_jacobian(idx.ee_site)
    jac_n = native.site_jacobian(idx.ee_site)
    assert np.abs(jac_w - jac_n).max() < 10 * JOINT_ATOL


def test_subset_reset_leaves_other_envs(pair):
    compiled, warp_h, _, state = pair
    warp_h.set_state(state)
    warp_h.step(state.ctrl)
    before = warp_h.get_state()
    fresh = TaskRuntime(compiled).sample_initial(warp_h.default_state(1), [7])
    warp_h.reset(np.array([1]), fresh)
    after = warp_h.get_state()
    np.testing.assert_array_equal(after.qpos[0], before.qpos[0])
    np.testing.assert_allclose(after.qpos[1], fresh.qpos[0], atol=1e-6)  # float32 on device


def test_model_edits_apply_per_world(pair):
    """A per-env friction edit lands in that world only (MuJoCo Warp reads the field per
    world); a field MuJoCo Warp shares across worlds is refused with the reason."""
    compiled, warp_h, native, state = pair
    friction = np.array([[0.2, 0.005, 0.0001], [1.5, 0.005, 0.0001]])
    warp_h.apply(ModelEdit("geom_friction", 0, friction))
    native.apply(ModelEdit("geom_friction", 0, friction))
    np.testing.assert_allclose(warp_h._wm.geom_friction.numpy()[:, 0], friction, rtol=1e-6)
    warp_h.set_state(state)
    native.set_state(state)
    warp_h.step(state.ctrl)
    native.step(state.ctrl)
    assert np.abs(warp_h.kinematics().qpos - native.kinematics().qpos).max() < JOINT_ATOL
    with pytest.raises(ValueError, match="cannot vary 'nq' per env"):
        warp_h.apply(ModelEdit("nq", 0, np.ones((2, 1))))


def test_observation_instant_as_natively(pair):
    """With an observation instant (substep 3 of the scene), warp's observed joint state
    and poses are native's to float32 parity, after a reset the reset state's own, and its
    observed frames are native's; without one, observations are the end of the step."""
    compiled, plain, _, state = pair
    site = compiled.index.ee_site
    seen = compiled.observed_at(3)
    warp_h = get_backend("warp").launch(seen, 2, device="cpu")
    native = get_backend("mujoco").launch(seen, 2)
    try:
        for h in (warp_h, native):
            h.set_state(state)
        a, b = warp_h.kinematics(at="observed"), native.kinematics(at="observed")
        np.testing.assert_allclose(a.site_pos, warp_h.kinematics().site_pos)
        between = 0.0
        for k in range(10):
            ctrl = state.ctrl.copy()
            ctrl[:, compiled.index.arm_act] += 0.2 * np.sin(0.3 * k)
            warp_h.step(ctrl)
            native.step(ctrl)
            a, b = warp_h.kinematics(at="observed"), native.kinematics(at="observed")
            assert np.abs(a.qpos - b.qpos).max() < JOINT_ATOL
            assert np.abs(a.site_pos[:, site] - b.site_pos[:, site]).max() < OBJECT_ATOL
            end = warp_h.kinematics().site_pos[:, site]
            between = max(between, float(np.abs(a.site_pos[:, site] - end).max()))
        assert between > 10 * OBJECT_ATOL  # the instant is not the end of the step
        img_w = warp_h.render("front", width=64, height=48, observed=True)
        img_n = native.render("front", width=64, height=48, observed=True)
        assert np.abs(img_w.astype(int) - img_n.astype(int)).max() <= 2
        plain.set_state(state)
        plain.step(state.ctrl)
        np.testing.assert_array_equal(
            plain.kinematics(at="observed").site_pos, plain.kinematics().site_pos
        )
    finally:
        warp_h.close()
        native.close()
