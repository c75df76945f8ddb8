"""LIBERO's tasks on the warp backend (MuJoCo Warp on Warp's CPU device here): each task
is put on the device, reset from its init states (with the episode's fixture draw as
per-world model edits) and stepped with LIBERO's osc_pose controller on the device, next
to native MuJoCo from the same episodes: after 10 control steps of settle actions (held
pose, gripper opening) the end effector within 0.1 mm and every object within 1 mm, and
the observed end effector (at LIBERO's observation instant) within 0.1 mm too.

The sample is three tasks of other suites than the parity tests
(tests/sim/test_warp_device.py); all 130 in the sweep lane (`-m sweep`; ~1 min per task
on 2 CPU cores, the first cold kernel compile several minutes).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests import lanes

pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")
pytest.importorskip("libero", reason="the libero extra is not installed")

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.backend_parity import EEF_BEFORE_CONTACT_M, OBJECT_AT_REST_M
from metasim.libero.importer import paths
from metasim.libero.importer.scene import load_task
from metasim.scene.compile import compile_scene

pytestmark = pytest.mark.slow

# All 130 pass (measured 2026-11-27, full flag). libero_spatial/0 and /5 are in CI: a bowl
# that LIBERO's init state leaves in the air drops ~12 cm during the settle steps onto box
# geoms. With MuJoCo Warp's default box-box (its GJK/EPA multi-contact path) they parted
# from native by 9-64 mm: from the same state native found 113 box-box contacts and
# MuJoCo Warp 79 (same 35 pairs; 17 pairs got 2 contacts where native's box-box gives 4).
# Native from a float32-rounded start stays within 5 µm (not sensitivity); with MuJoCo
# Warp's primitive box-box (`support.put_model` sets it) they agree within 0.21 mm.
CI = ["libero:libero_90/14", "libero:libero_object/5", "libero:libero_spatial/5"]
ALL = [f"libero:{s}/{i}" for s in paths.LIBERO_SUITES for i in range(len(paths.suite_tasks(s)))]
TASKS = lanes.sampled(ALL, CI)
EPISODES = [3, 41]  # init states 3 and 41


@pytest.mark.parametrize("ref", TASKS)
def test_task_resets_and_steps_on_warp_as_natively(ref: str) -> None:
    compiled = compile_scene(load_task(ref).scene)
    n = len(EPISODES)
    envs = [
        MetasimVectorEnv(compiled, num_envs=n, backend=b, autoreset=False, **opts)
        for b, opts in (("warp", {"device": "cpu"}), ("mujoco", {}))
    ]
    try:
        for env in envs:
            env.reset(options={"env_ids": list(range(n)), "seeds": EPISODES, "episodes": EPISODES})
        warp, native = envs
        idx = compiled.index
        for _ in range(10):
            action = native.controller.settle_action(n)
            for env in envs:
                env.step(action)
        a, b = warp.handler.kinematics(), native.handler.kinematics()
        eef = np.linalg.norm(a.site_pos[:, idx.ee_site] - b.site_pos[:, idx.ee_site], axis=-1)
        obj = np.linalg.norm(
            a.body_pos[:, idx.object_body] - b.body_pos[:, idx.object_body], axis=-1
        )
        assert np.isfinite(a.qpos).all()
        assert eef.max() <= EEF_BEFORE_CONTACT_M, (ref, eef)
        # the observations too, taken at LIBERO's instant (substep 24 of 25) on both
        sa, sb = warp.handler.kinematics(at="observed"), native.handler.kinematics(at="observed")
        seen = sa.site_pos[:, idx.ee_site] - sb.site_pos[:, idx.ee_site]
        assert np.linalg.norm(seen, axis=-1).max() <= EEF_BEFORE_CONTACT_M, (ref, seen)
        assert np.abs(sa.qpos[:, idx.gripper_qpos] - sb.qpos[:, idx.gripper_qpos]).max() < 1e-4
        assert obj.max() <= OBJECT_AT_REST_M, (ref, obj)
    finally:
        for env in envs:
            env.close()
