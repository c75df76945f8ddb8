"""The device-resident warp backend on LIBERO: robosuite's OSC as a Warp kernel
(`metasim.control.osc_warp`) against the numpy OSC (`metasim.control.osc`) substep by
substep, a step path without per-env host MuJoCo calls, per-world model edits, and
trajectory parity with native MuJoCo.

Runs on Warp's CPU device (kernels compiled by LLVM on first use, then cached under
~/.cache/warp). The random (task, init, seed) parity runs are in the sweep lane
(`-m sweep`); the first runs in the test's own lane.
"""

from __future__ import annotations

import copy
from typing import Any

import mujoco
import mujoco.batch
import numpy as np
import pytest

from tests import lanes

pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")
pytest.importorskip("libero", reason="the libero extra is not installed")

import mujoco_warp as mjw

from metasim.control.action_kinds.osc_pose import osc_for
from metasim.control.osc import arm_at
from metasim.evaluate.backend_parity import (
    EEF_BEFORE_CONTACT_M,
    OBJECT_AT_REST_M,
    backend_parity,
)
from metasim.libero.importer.scene import load_task
from metasim.scene.compile import CompiledScene, compile_scene
from metasim.sim import ModelEdit, get_backend
from metasim.sim.mujoco.handler import SPEC
from metasim.sim.warp import batch
from metasim.tasks.task import TaskRuntime

pytestmark = pytest.mark.slow

# Torques from the same state: the kernel reads MuJoCo Warp's float32 kinematics, inertia
# and bias, and computes in float64; the numpy OSC reads native float64 ones. Measured
# on the three tasks below: worst difference 3.6e-4 to 5.9e-4 N m (torques up to 80 N m).
TORQUE_ATOL = 5e-3  # N m


def _compiled(ref: str) -> CompiledScene:
    return compile_scene(load_task(ref).scene)


@pytest.fixture(scope="module")
def spatial() -> CompiledScene:
    return _compiled("libero:libero_spatial/0")


def _random_states(compiled: CompiledScene, n: int, seed: int) -> Any:
    """Init states of episodes 0..n-1 with the arm moved and moving (random)."""
    native = get_backend("mujoco").launch(compiled, n)
    state = TaskRuntime(compiled).sample_initial(native.default_state(n), list(range(n)))
    native.close()
    rng = np.random.default_rng(seed)
    idx = compiled.index
    state.qpos[:, idx.arm_qpos] += rng.normal(0.0, 0.15, (n, len(idx.arm_qpos)))
    state.qvel[:, idx.arm_dof] = rng.normal(0.0, 0.3, (n, len(idx.arm_dof)))
    return state


@pytest.mark.parametrize(
    "ref", ["libero:libero_spatial/0", "libero:libero_goal/3", "libero:libero_10/5"]
)
def test_osc_kernel_torques_match_numpy_every_substep(ref: str) -> None:
    """From the same state each substep (the native run's, loaded into MuJoCo Warp), the
    kernel's ctrl equals the numpy OSC's: the goal update of substep 0, the stale first
    substep after a reset (env 0), the null-space term, clipping and the gripper."""
    compiled = _compiled(ref)
    m, b = compiled.model, 3
    state = _random_states(compiled, b, seed=len(ref))
    osc = osc_for(compiled, b)
    osc.reset(range(b), arm_at(m, osc.index, state.qpos), stale=False)
    reset_pose = state.qpos[:1].copy()
    reset_pose[:, osc.index.arm_qpos] = compiled.index.home
    osc.reset([0], arm_at(m, osc.index, reset_pose), stale=True)  # LIBERO's stale start
    rng = np.random.default_rng(7)
    osc.q0 += rng.normal(0.0, 0.05, osc.q0.shape)
    osc.command(np.clip(rng.normal(0.0, 0.4, (b, 7)), -1, 1))
    native = [mujoco.MjData(m) for _ in range(b)]
    nstate = mujoco.mj_stateSize(m, SPEC)
    for i, d in enumerate(native):
        for name, comp in (("qpos", d.qpos), ("qvel", d.qvel), ("ctrl", d.ctrl)):
            comp[:] = getattr(state, name)[i]
    wm = mjw.put_model(m)
    wd = mjw.put_data(m, mujoco.MjData(m), nworld=b, nconmax=512, njmax=1024)
    kernel_osc = copy.deepcopy(osc)
    device = kernel_osc.on_device("warp", m, wm, "cpu")
    rows = np.zeros((b, nstate))
    worst, moved = 0.0, 0.0
    for k in range(compiled.substeps):
        for i, d in enumerate(native):
            mujoco.mj_getState(m, d, rows[i], SPEC)
        batch.write_state(wm, wd, rows, np.ones(b, dtype=bool))
        device.upload()
        mjw.step1(wm, wd)
        device.substep(k, wd)
        assert not device.download().any()
        for d in native:
            mujoco.mj_step1(m, d)
        osc.batch(k, [m] * b, native)
        ctrl = np.array([d.ctrl for d in native])
        worst = max(worst, float(np.abs(wd.ctrl.numpy() - ctrl).max()))
        moved = max(moved, float(np.abs(ctrl[:, osc.index.arm_actuators]).max()))
        np.testing.assert_allclose(kernel_osc.goal_pos, osc.goal_pos, atol=1e-5)
        np.testing.assert_allclose(kernel_osc.goal_ori, osc.goal_ori, atol=1e-5)
        np.testing.assert_array_equal(kernel_osc.gripper_input, osc.gripper_input)
        np.testing.assert_allclose(kernel_osc.gripper, osc.gripper, atol=1e-12)
        kernel_osc.stale[:] = osc.stale  # the next upload starts from the same flags
        for d in native:
            mujoco.mj_step2(m, d)
    assert moved > 1.0  # the comparison covers real torques, not a resting arm
    print(ref, "worst torque difference", worst, "N m")
    assert worst < TORQUE_ATOL, worst


def test_step_path_makes_no_host_mujoco_call(spatial, monkeypatch) -> None:
    """A control step with osc_pose and contact tracking, and everything the env reads
    after it, run without one native MuJoCo call (any mj_* raises while stepping)."""
    b = 2
    handler = get_backend("warp").launch(spatial, b, device="cpu")
    handler.track_contacts = True
    state = _random_states(spatial, b, seed=3)
    handler.set_state(state)
    osc = osc_for(spatial, b)
    osc.reset(range(b), arm_at(spatial.model, osc.index, state.qpos), stale=True)
    osc.command(np.zeros((b, 7)))
    handler.step(state.ctrl, osc)  # first call: builds the device controller

    def host_call(*_: Any, **__: Any) -> None:
        raise AssertionError("a native MuJoCo call on the warp step path")

    for name in dir(mujoco):
        if name.startswith("mj_") and callable(getattr(mujoco, name)):
            monkeypatch.setattr(mujoco, name, host_call)
    for name in ("step", "forward", "jac", "rollout"):  # native's batch, no mj_* from Python
        monkeypatch.setattr(mujoco.batch.Batch, name, host_call)
    for _ in range(2):
        osc.command(np.full((b, 7), 0.3))
        handler.step(state.ctrl, osc)
        handler.step(state.ctrl)  # without a controller
        handler.kinematics()
        handler.kinematics(at="step")
        handler.site_jacobian(spatial.index.ee_site)
        handler.contacts()
        handler.get_state()
    monkeypatch.undo()
    # and the guard itself works: a host call on the path would have failed the test
    monkeypatch.setattr(mujoco, "mj_step", host_call)
    native = get_backend("mujoco").launch(spatial, 1)
    native.track_contacts = True  # (its per-env loop: mj_step from Python)
    with pytest.raises(AssertionError, match="native MuJoCo call"):
        native.step(state.ctrl[:1])
    handler.close()


def test_per_world_model_edits_match_native(spatial) -> None:
    """Per-env gravity and joint damping on the device: each world moves as native MuJoCo
    with the same edit, and differently from the other world."""
    b = 2
    warp_h = get_backend("warp").launch(spatial, b, device="cpu")
    native = get_backend("mujoco").launch(spatial, b)
    state = _random_states(spatial, b, seed=5)
    gravity = np.array([[0.0, 0.0, -9.81], [0.0, 0.0, -4.0]])
    damping = np.array([0.1, 5.0])
    for h in (warp_h, native):
        h.apply(ModelEdit("gravity", 0, gravity))
        h.apply(ModelEdit("dof_damping", int(spatial.index.arm_dof[1]), damping))
        h.set_state(state)
    for _ in range(5):
        warp_h.step(state.ctrl)
        native.step(state.ctrl)
    a, n = warp_h.kinematics(), native.kinematics()
    assert np.abs(a.qpos - n.qpos).max() < 1e-4
    assert np.abs(a.qpos[0] - a.qpos[1]).max() > 1e-3  # the worlds differ
    with pytest.raises(ValueError, match="cannot vary 'nbody'"):
        warp_h.apply(ModelEdit("nbody", 0, np.ones((b, 1))))
    warp_h.close()
    native.close()


_rng = np.random.default_rng(2026)
_suites = ("libero_spatial", "libero_object", "libero_goal", "libero_10")
_DRAWS = [("libero:libero_spatial/0", 3, 0)] + [
    (f"libero:{_suites[i % 4]}/{int(_rng.integers(10))}", int(_rng.integers(50)), i)
    for i in range(8)
]
_PARITY_CASES = lanes.sampled(_DRAWS, _DRAWS[:1], ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")


@pytest.mark.parametrize(("ref", "episode", "seed"), _PARITY_CASES)
def test_libero_trajectory_parity_with_native(ref: str, episode: int, seed: int) -> None:
    """100 control steps of smooth random actions from one LIBERO episode on both
    backends: the end effector within 0.1 mm until the robot's first contact, objects
    within 1 mm until then."""
    result = backend_parity(_compiled(ref), "warp", episode, steps=100, seed=seed, device="cpu")
    summary = result.summary()
    print(ref, episode, summary)
    assert result.eef_before_contact() <= EEF_BEFORE_CONTACT_M, summary
    assert result.object_at_rest() <= OBJECT_AT_REST_M, summary
