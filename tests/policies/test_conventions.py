"""Every declared action convention: a known motion expressed in it moves the robot
exactly as the canonical actions do (through the harness's conversion)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.policy_io import converter_for
from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.policies.base import register_policy
from metasim.policies.conventions import (
    ROT_DIM,
    ActionConvention,
    ActionConverter,
    express,
    from_mat,
    to_mat,
)
from metasim.policies.scripted import ScriptedExpert
from metasim.rotations import axis_angle_to_mat

EEF = [
    ActionConvention(space=s, rotation=r, gripper=g)
    for s, r, g in itertools.product(
        ["ee_delta", "ee_pose"], list(ROT_DIM), ["open1", "close1", "pm1_open_neg", "relative"]
    )
]
JOINT = [
    ActionConvention(space=s, gripper=g)
    for s, g in itertools.product(["joint_pos", "joint_vel"], ["open1", "pm1_open_pos"])
]


@pytest.mark.parametrize("fmt", list(ROT_DIM))
def test_rotation_formats_round_trip(fmt):
    rng = np.random.default_rng(0)
    mats = axis_angle_to_mat(rng.normal(size=(50, 3)))
    back = to_mat(from_mat(mats, fmt), fmt)
    np.testing.assert_allclose(back, mats, atol=1e-9)


def test_quaternion_orders_differ_and_are_declared():
    q_wxyz = from_mat(axis_angle_to_mat(np.array([[0.0, 0.0, 0.5]])), "quat_wxyz")
    q_xyzw = from_mat(axis_angle_to_mat(np.array([[0.0, 0.0, 0.5]])), "quat_xyzw")
    np.testing.assert_allclose(q_xyzw[0], q_wxyz[0, [1, 2, 3, 0]])
    # the same numbers read in the other order are a different rotation
    assert not np.allclose(to_mat(q_wxyz, "quat_xyzw"), to_mat(q_wxyz, "quat_wxyz"))


def test_gripper_conventions_mean_what_they_say():
    obs = {"gripper": np.array([[0.3], [0.3]])}
    cases = {
        "open1": ([1.0, 0.0], [1.0, 0.0]),
        "close1": ([1.0, 0.0], [0.0, 1.0]),
        "pm1_open_neg": ([-1.0, 1.0], [1.0, 0.0]),
        "pm1_open_pos": ([-1.0, 1.0], [0.0, 1.0]),
        "relative": ([0.5, -0.5], [0.8, 0.0]),
    }
    for kind, (given, opening) in cases.items():
        conv = ActionConvention(space="joint_pos", gripper=kind)  # type: ignore[arg-type]
        c = ActionConverter(conv, n_arm=2, control_dt=0.05)
        a = np.array([[0.0, 0.0, given[0]], [0.0, 0.0, given[1]]])
        out = c(a, {**obs, "joint_pos": np.zeros((2, 2))})
        np.testing.assert_allclose(out[:, -1], opening, err_msg=kind)
    conv = ActionConvention(space="joint_pos", binarize=True)
    out = ActionConverter(conv, 2, 0.05)(np.array([[0, 0, 0.7], [0, 0, 0.2]]), obs)
    np.testing.assert_array_equal(out[:, -1], [1.0, 0.0])


def _expert_motion(lift_scene, steps=45):
    """Canonical ee_delta actions of the expert and the robot state at each step."""
    env = MetasimVectorEnv(lift_scene, num_envs=2, autoreset=False)
    obs, _ = env.reset(options={"env_ids": np.arange(2), "seeds": [11, 12]})
    states = []
    from metasim.evaluate.policy_io import policy_context
    from metasim.policies.base import make_policy

    pol = make_policy("scripted", policy_context(env, "ee_delta"))
    pol.reset("")
    actions = []
    for _ in range(steps):
        a = pol.act(obs)[:, 0]
        actions.append(a)
        states.append(env.handler.get_state())
        obs, *_ = env.step(a)
    final = env.handler.get_state()
    env.close()
    return actions, final


@pytest.mark.parametrize("conv", EEF, ids=lambda c: f"{c.space}-{c.rotation}-{c.gripper}")
def test_eef_conventions_move_the_robot_identically(lift_scene, conv):
    actions, want = _expert_motion(lift_scene)
    env = MetasimVectorEnv(lift_scene, num_envs=2, autoreset=False)
    env.reset(options={"env_ids": np.arange(2), "seeds": [11, 12]})
    convert = converter_for(lift_scene, conv)
    n_arm, dt = convert.n_arm, lift_scene.control_dt
    for a in actions:
        state = env.robot_state()
        written = express(a, state, conv, n_arm, dt)  # the motion in this convention
        assert written.shape[1] == conv.dim(n_arm)
        env.step(convert(written, env.robot_state()))
    got = env.handler.get_state()
    env.close()
    np.testing.assert_allclose(got.qpos, want.qpos, atol=1e-7)


@pytest.mark.parametrize("conv", JOINT, ids=lambda c: f"{c.space}-{c.gripper}")
def test_joint_conventions_move_the_robot_identically(lift_scene, conv):
    env = MetasimVectorEnv(lift_scene, num_envs=1, action_space="joint_pos", autoreset=False)
    env.reset(options={"env_ids": np.arange(1), "seeds": [5]})
    home = env.robot_state()["joint_pos"][0].copy()
    t = np.arange(30) * lift_scene.control_dt
    motion = [
        np.append(home + 0.2 * np.sin(2.0 * ti + np.arange(len(home))), float(ti > 0.7))[None]
        for ti in t
    ]

    def run(through: ActionConvention | None) -> np.ndarray:
        env.reset(options={"env_ids": np.arange(1), "seeds": [5]})
        convert = converter_for(lift_scene, through or conv)
        for a in motion:
            if through is None:
                env.step(a)
            else:
                written = express(a, env.robot_state(), through, convert.n_arm, convert.dt)
                env.step(convert(written, env.robot_state()))
        return env.handler.get_state().qpos.copy()

    want = run(None)
    got = run(conv)
    env.close()
    np.testing.assert_allclose(got, want, atol=1e-9)


class _Expressed(ScriptedExpert):
    """The scripted expert re-expressed in a declared convention (what a checkpoint
    trained in that convention would output for the same motion)."""

    conv = ActionConvention()

    def act(self, obs, env_ids=None):
        canon = super().act(obs)[:, 0]
        n_arm = len(self.ctx.compiled.index.arm_qpos)
        return express(canon, obs["policy"], self.conv, n_arm, self.ctx.control_dt)[:, None]


@pytest.mark.parametrize(
    "conv",
    [
        ActionConvention(space="ee_pose", rotation="quat_xyzw", gripper="pm1_open_neg"),
        ActionConvention(space="ee_delta", rotation="euler_xyz", gripper="close1"),
        ActionConvention(space="ee_delta", rotation="rot6d", gripper="relative"),
    ],
    ids=lambda c: f"{c.space}-{c.rotation}-{c.gripper}",
)
def test_the_harness_converts_declared_conventions_end_to_end(lift_scene, conv):
    name = f"expressed_{conv.space}_{conv.rotation}_{conv.gripper}"
    register_policy(name)(lambda ctx: type(name, (_Expressed,), {"conv": conv})(ctx))
    base = sorted(
        (r.episode, r.success, r.steps)
        for r in run_task(lift_scene, RolloutSpec.of("scripted", seed=1, num_envs=2), 4)
    )
    opts = {"actions": conv.model_dump()}
    got = sorted(
        (r.episode, r.success, r.steps)
        for r in run_task(lift_scene, RolloutSpec.of(name, opts, seed=1, num_envs=2), 4)
    )
    assert got == base and all(s for _, s, _ in got)


def test_a_wrong_declared_width_fails_the_episodes_with_the_convention_named(lift_scene):
    opts = {"actions": {"space": "ee_delta", "rotation": "quat_wxyz"}}  # 8-D, expert gives 7
    records = list(run_task(lift_scene, RolloutSpec.of("scripted", opts, seed=0, num_envs=2), 2))
    assert all(r.error and "quat_wxyz" in r.error and "8" in r.error for r in records)


def test_every_space_names_its_action_columns():
    """A convention names its own columns (a dataset's `action` names): the widths each
    space is declared with, the gripper last."""
    want = {
        ("joint_pos", "axis_angle"): [*(f"joint_{i}" for i in range(7)), "gripper"],
        ("joint_vel", "axis_angle"): [*(f"joint_{i}" for i in range(7)), "gripper"],
        ("mocap_delta", "axis_angle"): ["x", "y", "z", "gripper"],
        ("ee_delta", "axis_angle"): ["x", "y", "z", "r0", "r1", "r2", "gripper"],
        ("osc_pose", "axis_angle"): ["x", "y", "z", "r0", "r1", "r2", "gripper"],
        ("ee_pose", "quat_wxyz"): ["x", "y", "z", "r0", "r1", "r2", "r3", "gripper"],
        ("ee_delta", "rot6d"): ["x", "y", "z", *(f"r{i}" for i in range(6)), "gripper"],
    }
    for (space, rotation), names in want.items():
        gripper = "pm1_open_neg" if space == "mocap_delta" else "open1"
        conv = ActionConvention(space=space, rotation=rotation, gripper=gripper)  # type: ignore[arg-type]
        assert conv.names(7) == names, space
        assert conv.dim(7) == len(names) and conv.describe(7).startswith(f"{len(names)}-D")
