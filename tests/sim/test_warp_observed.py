"""The warp rig on the warp backend draws the scene's observation instant (issue 44).

A scene with `task.observe_substep` (LIBERO: robosuite's substep 24 of 25) is observed at
the state that substep started from. The warp backend keeps that state's rows on the
device inside the step and its rig computes their kinematics there
(`metasim.sim.warp.observed`), as the native backend renders its kept rows. Checked here:
1. the frames are, byte for byte, the same ray tracer's frames of that state loaded into
   a native handler, made without a host copy of the state, and the end of the step (what
   the rig drew before) is another image (the control);
2. on a LIBERO task, against the native backend at the same instant (same actions): the
   same ray tracer's frames within float32 physics, and OpenGL's frames as close as the
   ray tracer gets to OpenGL on the native backend's own physics.
On Warp's CPU device.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("warp", reason="the warp extra (mujoco-warp, warp-lang) is not installed")
pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

import warp as wp

from metasim.bench.image_parity import psnr
from metasim.scene.render_schema import RaytraceSpec
from metasim.sim import get_backend
from metasim.sim.base import SimState
from metasim.sim.cameras import View
from metasim.sim.mujoco.rows import state_layout
from metasim.tasks.task import TaskRuntime

pytestmark = pytest.mark.slow

OBSERVE = 24  # of lift_cube's 25 substeps, as LIBERO's
FAST = RaytraceSpec(samples_per_pixel=1)
# The warp backend's frames at the instant against the native backend's (same ray tracer,
# same actions; LIBERO libero_goal/0, 64², 12 steps, measured 2026-11-29): agentview 64.2
# dB to identical, the wrist camera 39.5-54.1 dB (float32 against float64 physics moves
# the close-up view's edges by a pixel). The end of the step, one substep later (the
# control): agentview 27.8-37.4 dB, wrist 22.5-28.3 dB.
AGENT_DB, WRIST_DB = 50.0, 35.0
# PSNR against the native backend's OpenGL frame: the warp backend's frame and the native
# backend's ray-traced frame of the same instant are within 0.02 dB of each other there
GL_DB = 0.1


def _rows_state(model: Any, rows: np.ndarray) -> SimState:
    """A SimState of flat mjSTATE_INTEGRATION rows."""
    lay, b = state_layout(model), len(rows)
    return SimState(
        time=rows[:, lay["time"]][:, 0].copy(),
        qpos=rows[:, lay["qpos"]].copy(),
        qvel=rows[:, lay["qvel"]].copy(),
        act=rows[:, lay["act"]].copy(),
        ctrl=rows[:, lay["ctrl"]].copy(),
        qacc_warmstart=rows[:, lay["qacc_warmstart"]].copy(),
        mocap_pos=rows[:, lay["mocap_pos"]].reshape(b, model.nmocap, 3).copy(),
        mocap_quat=rows[:, lay["mocap_quat"]].reshape(b, model.nmocap, 4).copy(),
    )


def test_warp_rig_draws_the_kept_instant_without_a_host_copy(lift_scene, monkeypatch) -> None:
    cams = [c.name for c in lift_scene.scene.cameras]
    views = [View(c, 48, 32) for c in cams]
    warp_h: Any = get_backend("warp").launch(lift_scene.observed_at(OBSERVE), 2, device="cpu")
    ref = get_backend("mujoco").launch(lift_scene, 2)  # the ray tracer of a loaded state
    try:
        state = TaskRuntime(lift_scene).sample_initial(ref.default_state(2), [0, 1])
        warp_h.set_state(state)
        rig, ref_rig = warp_h.camera_rig(views, "warp", FAST), ref.camera_rig(views, "warp", FAST)
        ref.set_state(state)
        np.testing.assert_array_equal(rig.render()[0], ref_rig.render()[0])  # reset: its own
        arm, wrist = lift_scene.index.arm_act, cams.index("wrist")
        kept, end_db = None, []
        for k in range(4):
            ctrl = state.ctrl.copy()
            ctrl[:, arm] += 0.3 * np.sin(0.3 * k + np.arange(len(arm)))
            warp_h.step(ctrl)
            copied: list[int] = []
            numpy = wp.array.numpy

            def counting(self: Any, numpy: Any = numpy, copied: list = copied) -> np.ndarray:
                copied.append(self.size)
                return numpy(self)

            monkeypatch.setattr(wp.array, "numpy", counting)
            warp_h.device_arrays(observed=True)  # the instant's kinematics: on the device
            monkeypatch.undo()
            assert copied == []
            frames = rig.render()
            if kept is not None:  # a frame kept from the last render is left as it was
                np.testing.assert_array_equal(kept[0], kept[1])
            kept = (frames[wrist], frames[wrist].copy())
            ref.set_state(_rows_state(lift_scene.model, warp_h._obs_rows))
            for got, want in zip(frames, ref_rig.render(), strict=True):
                np.testing.assert_array_equal(got, want)
            ref.set_state(warp_h.get_state())  # the end of the step: the control
            end_db.append(psnr(ref_rig.render()[wrist], frames[wrist]))
        assert max(end_db) < WRIST_DB, end_db
        fresh = TaskRuntime(lift_scene).sample_initial(ref.default_state(1), [5])
        warp_h.reset(np.array([1]), fresh)  # a reset world is drawn at its reset state
        ref.set_state(_rows_state(lift_scene.model, warp_h._obs_rows))
        np.testing.assert_allclose(ref.get_state().qpos[1], fresh.qpos[0], atol=1e-6)
        for got, want in zip(rig.render(), ref_rig.render(), strict=True):
            np.testing.assert_array_equal(got, want)
    finally:
        warp_h.close()
        ref.close()


def test_libero_instant_on_warp_against_native() -> None:
    pytest.importorskip("libero", reason="the libero extra is not installed")
    from metasim.envs.vec_env import CameraView, MetasimVectorEnv

    task, size = "libero:libero_goal/0", 64
    views = [CameraView("agentview", size, size), CameraView("robot0_eye_in_hand", size, size)]
    runs = [("warp", "warp"), ("mujoco", "warp"), ("mujoco", "opengl")]
    envs = {
        r: MetasimVectorEnv(
            task, backend=r[0], cameras=views, render=r[1], autoreset=False, render_spp=1
        )
        for r in runs
    }
    try:
        warp_env, native_env = envs[runs[0]], envs[runs[1]]
        assert warp_env.handler.observe_substep == OBSERVE
        for env in envs.values():
            env.reset(seed=3)
        floors = {"agentview": AGENT_DB, "robot0_eye_in_hand": WRIST_DB}
        for k in range(6):
            action = np.zeros((1, warp_env.controller.dim))
            action[0, :3] = 0.8 * np.sin(0.4 * k + np.arange(3))
            action[0, -1] = -1.0
            obs = {r: env.step(action)[0]["policy"] for r, env in envs.items()}
            saved = native_env.handler.get_state()  # the control: the warp end of the step
            native_env.handler.set_state(warp_env.handler.get_state())
            end = native_env.images()
            native_env.handler.set_state(saved)
            for v in views:
                key = f"{v.key}_rgb"
                warp_img, native_img, gl = (obs[r][key] for r in runs)
                floor = floors[v.camera]
                assert psnr(native_img, warp_img) >= floor, (k, key)
                assert psnr(native_img, end[key]) < floor, (k, key)
                assert abs(psnr(gl, warp_img) - psnr(gl, native_img)) <= GL_DB, (k, key)
    finally:
        for env in envs.values():
            env.close()
