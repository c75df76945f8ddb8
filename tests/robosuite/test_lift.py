"""robosuite's Lift in metasim: it loads and compiles from robosuite's own MJCF, resets
to robosuite's reset distribution (recorded draws), steps, and its success agrees with
robosuite's `_check_success` on the reference's own states."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.robosuite.checks.states import metasim_successes, split
from metasim.robosuite.importer.export import MODEL_SEED, export
from metasim.robosuite.reference.simulator import RobosuiteRef
from metasim.scene.sources import compile_task


@pytest.mark.reference
def test_lift_resets_from_robosuite_draws_and_steps() -> None:
    compiled = compile_task("robosuite:Lift")
    states = np.load(export("Lift").states)["states"]
    assert states.shape == (50, 1 + 16 + 15)
    assert np.ptp(states[:, 10:12], axis=0).min() > 0.01  # the cube's x, y are drawn
    env = MetasimVectorEnv(compiled, num_envs=2, autoreset=False)
    try:
        env.reset(seed=0, options={"seeds": [1, 2], "episodes": [0, 7]})
        qpos = env.handler.get_state().qpos
        cube = compiled.model.joint("cube_joint0").qposadr[0]
        np.testing.assert_allclose(qpos[:, cube : cube + 7], states[[0, 7], 10:17], atol=1e-9)
        hold = np.zeros((2, env.controller.dim))
        for _ in range(10):
            env.step(hold)
        after = env.handler.get_state()
        assert np.isfinite(after.qpos).all() and np.isfinite(after.qvel).all()
        assert abs(after.qpos[0, cube + 2] - states[0, 12]) < 0.02  # the cube rests
    finally:
        env.close()


@pytest.mark.reference
def test_lift_success_agrees_with_robosuite(ref: RobosuiteRef) -> None:
    """The cube raised through robosuite's threshold (table + 4 cm) in 2 mm steps: each
    state judged by robosuite's `_check_success` and by metasim's predicate."""
    ref.load("Lift", seed=MODEL_SEED)
    start = ref.reset(seed=3)
    qpos = np.repeat(start["qpos"][None], 41, axis=0)
    qpos[:, 11] = 0.80 + np.linspace(0.0, 0.08, 41)  # cube z around 0.84
    qvel = np.zeros((41, len(start["qvel"])))
    theirs = ref.successes(qpos, qvel)["success"]
    ours = metasim_successes(
        "Lift", compile_task("robosuite:Lift"), split({"qpos": qpos, "qvel": qvel}, 41)
    )
    assert 5 < theirs.sum() < 36  # both verdicts occur
    np.testing.assert_array_equal(ours, theirs)
