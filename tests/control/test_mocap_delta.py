"""The `mocap_delta` action kind on a small mocap-driven gripper (tests/data/mocap_robot:
Meta-World's weld, finger joints and actuators, passive arm slides): the mocap target
moves exactly by action x scale per step from where it was and is clipped to the box, the
fingers get (a, -a), the hand follows the target, batched envs equal single ones bit for
bit, and MJX agrees with native MuJoCo."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from metasim.control.actions import ActionController
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.scene import compile_file
from metasim.scene.compile import CompiledScene

SCENE = Path(__file__).resolve().parents[1] / "data/mocap_robot/scene.yaml"
LOW, HIGH, SCALE = np.array([-0.2, 0.45, 0.1]), np.array([0.2, 0.75, 0.3]), 0.01


@pytest.fixture(scope="module")
def mocap_scene() -> CompiledScene:
    return compile_file(SCENE)


def make_env(scene: CompiledScene, num_envs: int, **options: object) -> MetasimVectorEnv:
    env = MetasimVectorEnv(
        scene, num_envs=num_envs, action_space="mocap_delta", autoreset=False, **options
    )
    env.reset(seed=0)
    return env


def bodies(scene: CompiledScene) -> tuple[int, int]:
    """(hand body, mocap body) ids."""
    return scene.index.bodies["robot/hand"], scene.index.bodies["robot/mocap"]


def random_actions(steps: int, num_envs: int, seed: int) -> np.ndarray:
    """(steps, B, 4) actions past [-1, 1] now and then (the kind clips xyz, not the effort)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.6, 1.6, size=(steps, num_envs, 4))


def test_mocap_moves_by_action_times_scale_clipped_to_the_box(mocap_scene):
    env = make_env(mocap_scene, 2)
    _, mocap_body = bodies(mocap_scene)
    gripper = [mocap_scene.model.actuator(f"robot/{n}").id for n in ("r_close", "l_close")]
    expected = env.handler.get_state().mocap_pos[:, 0].copy()
    clipped_any = False
    for action in random_actions(60, 2, seed=1):
        env.step(action)
        step = np.clip(action[:, :3], -1, 1) * SCALE  # Meta-World's set_xyz_action
        moved = expected + step
        expected = np.clip(moved, LOW, HIGH)
        clipped_any |= bool((moved != expected).any())
        state = env.handler.get_state()
        np.testing.assert_array_equal(state.mocap_pos[:, 0], expected)
        np.testing.assert_array_equal(state.mocap_quat[:, 0], np.tile([1.0, 0, 1, 0], (2, 1)))
        np.testing.assert_array_equal(env.handler.kinematics().body_pos[:, mocap_body], expected)
        # the effort goes to the fingers unclipped as (a, -a) (MuJoCo clamps to ctrlrange)
        np.testing.assert_array_equal(
            state.ctrl[:, gripper], np.stack([action[:, 3], -action[:, 3]], 1)
        )
    assert clipped_any  # the walk reached the box's walls


def test_hand_tracks_the_mocap_target(mocap_scene):
    env = make_env(mocap_scene, 1)
    hand, mocap_body = bodies(mocap_scene)
    lag = []
    for _ in range(20):  # 20 steps of 1 cm: 0.8 m/s at 80 Hz
        env.step(np.array([[0.0, 1.0, -0.5, -1.0]]))
        kin = env.handler.kinematics()
        lag.append(np.linalg.norm(kin.body_pos[0, hand] - kin.body_pos[0, mocap_body]))
    for _ in range(40):
        env.step(np.array([[0.0, 0.0, 0.0, -1.0]]))
    kin = env.handler.kinematics()
    target = kin.body_pos[0, mocap_body]
    np.testing.assert_allclose(target, [0.0, 0.75, 0.1], atol=1e-12)  # y and z at the box
    # Measured: 0.31 mm of sag under gravity at rest (the weld is soft: solref 0.02),
    # at most 16 mm of lag while moving at 0.8 m/s.
    np.testing.assert_allclose(kin.body_pos[0, hand], target, atol=1e-3)
    assert max(lag) < 0.03, max(lag)


def test_gripper_effort_closes_and_opens_the_fingers(mocap_scene):
    env = make_env(mocap_scene, 2)
    fingers = mocap_scene.index.gripper_qpos
    for _ in range(30):
        env.step(np.array([[0.0, 0, 0, 1.0], [0.0, 0, 0, -1.0]]))
    q = env.handler.kinematics().qpos[:, fingers]
    # +1 closes: r_close toward its upper limit 0.04, l_close toward its lower -0.03
    assert q[0, 0] > 0.039 and q[0, 1] < -0.029, q[0]
    np.testing.assert_allclose(q[1], [0.0, 0.0], atol=1e-3)  # -1 keeps them open


@pytest.mark.parametrize("num_envs", [1, 3])
def test_batched_equals_single_env_bit_for_bit(mocap_scene, num_envs):
    actions = random_actions(25, num_envs, seed=2)
    batched = make_env(mocap_scene, num_envs, nthread=2)
    for a in actions:
        batched.step(a)
    together = batched.handler.get_state()
    for i in range(num_envs):
        alone = make_env(mocap_scene, 1, nthread=1)
        for a in actions:
            alone.step(a[i : i + 1])
        single = alone.handler.get_state()
        for name in ("qpos", "qvel", "mocap_pos", "mocap_quat", "ctrl"):
            np.testing.assert_array_equal(getattr(together, name)[i], getattr(single, name)[0])


def test_hold_and_settle_actions(mocap_scene):
    env = make_env(mocap_scene, 2)
    ctl = env.controller
    assert ctl.dim == 4
    np.testing.assert_array_equal(ctl.settle_action(2), [[0, 0, 0, -1.0]] * 2)
    env.step(np.array([[0.3, 0, 0, 0.7], [0, 0, 0, -0.2]]))
    np.testing.assert_array_equal(
        ctl.hold_action(env.handler.kinematics()), [[0, 0, 0, 0.7], [0, 0, 0, -0.2]]
    )
    before = env.handler.get_state().mocap_pos
    env.step(ctl.hold_action(env.handler.kinematics()))
    np.testing.assert_array_equal(env.handler.get_state().mocap_pos, before)


def test_mocap_kind_refuses_other_robots_and_other_kinds_refuse_it(mocap_scene, lift_scene):
    with pytest.raises(ValueError, match=r"driven by position actuators.*not 'mocap_delta'"):
        ActionController(lift_scene, "mocap_delta")
    with pytest.raises(
        ValueError, match=r"driven by mocap actuators: its action space is mocap_delta"
    ):
        ActionController(mocap_scene, "ee_delta")
    with pytest.raises(ValueError, match="must be"):
        ActionController(mocap_scene, "mocap_delta").to_ctrl(np.zeros((1, 7)), None, None, None)  # type: ignore[arg-type]


@pytest.mark.slow
def test_mjx_matches_native(mocap_scene):
    """MJX (CPU, float64) gives the same mocap targets and hand positions as native
    MuJoCo within 1e-6 m over 15 control steps of random actions (2 envs)."""
    pytest.importorskip("mujoco.mjx")
    t0 = time.perf_counter()
    jax_env = make_env(mocap_scene, 2, backend="mjx")
    native = make_env(mocap_scene, 2)
    hand, _ = bodies(mocap_scene)
    for a in random_actions(15, 2, seed=3):
        jax_env.step(a)
        native.step(a)
        j, n = jax_env.handler.get_state(), native.handler.get_state()
        np.testing.assert_allclose(j.mocap_pos, n.mocap_pos, atol=1e-12)
        np.testing.assert_array_equal(j.mocap_quat, n.mocap_quat)
        np.testing.assert_allclose(
            jax_env.handler.kinematics().body_pos[:, hand],
            native.handler.kinematics().body_pos[:, hand],
            atol=1e-6,
        )
    print(f"mjx vs native: {time.perf_counter() - t0:.1f} s")


def test_the_descriptor_of_a_mocap_robot(mocap_scene):
    robot = mocap_scene.robot
    assert robot.control == "mocap" and robot.arm_actuators == ()
    assert robot.mocap is not None and robot.mocap.body == "mocap" and robot.mocap.scale == 0.01
    assert robot.gripper is not None
    assert robot.gripper.drives() == (("r_close", "l_close"), (-1.0, 1.0), (1.0, -1.0))
    assert len(mocap_scene.index.arm_act) == 0 and len(mocap_scene.index.arm_qpos) == 3


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("mocap:\n  body: mocap", "mocap_block:\n  body: mocap"), "needs a mocap:"),
        (("low: [-0.2, 0.45, 0.1]", "low: [-0.2, 0.45]"), r"mocap.low: expected a list of 3"),
        (("low: [-0.2, 0.45, 0.1]", "low: [0.3, 0.45, 0.1]"), "exceeds high"),
        (("home: [0.0, 0.0, 0.0]", "home: [0.0]"), "one value per arm joint"),
        (("open_ctrl: [-1, 1]", "open_ctrl: [-1, 1, 0]"), r"gripper.open_ctrl: expected one"),
    ],
)
def test_bad_mocap_descriptors_are_refused(tmp_path, edit, message):
    from metasim.scene.robots import RobotError, resolve_robot

    folder = SCENE.parent
    text = (folder / "robot.yaml").read_text()
    assert edit[0] in text
    (tmp_path / "robot.yaml").write_text(
        text.replace(edit[0], edit[1]).replace("robot.xml", str(folder / "robot.xml"))
    )
    with pytest.raises(RobotError, match=message):
        resolve_robot("mjcf:robot.yaml", tmp_path)


def test_a_mocap_body_that_is_not_a_mocap_is_refused(tmp_path):
    folder = SCENE.parent
    robot = (folder / "robot.yaml").read_text().replace("body: mocap", "body: hand")
    (tmp_path / "robot.yaml").write_text(robot.replace("robot.xml", str(folder / "robot.xml")))
    (tmp_path / "scene.yaml").write_text(SCENE.read_text())
    with pytest.raises(ValueError, match="'hand' is not a mocap body"):
        ActionController(compile_file(tmp_path / "scene.yaml"), "mocap_delta")
