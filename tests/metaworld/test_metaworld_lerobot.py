"""`policies/lerobot_metaworld.yaml`: the observation metasim hands a LeRobot checkpoint
trained on Meta-World is the one LeRobot's own Meta-World env would (lerobot/envs/
metaworld.py): `observation.image` = corner2 moved to (0.75, 0.075, 0.7), 480x480, flipped
on both axes relative to the package's render; `observation.state` = obs[0:4]."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.errors import MetasimInputError
from metasim.metaworld.importer.source import MetaworldSource
from metasim.metaworld.lerobot_tasks import task_description, task_descriptions
from metasim.metaworld.reference.simulator import MetaWorldRef
from metasim.policies.observation import ObservationSpec
from metasim.reference.images import psnr
from metasim.scene.sources import compile_task

PRESET = Path(__file__).resolve().parents[2] / "policies" / "lerobot_metaworld.yaml"
LEROBOT_CORNER2 = np.array([0.75, 0.075, 0.7])  # lerobot/envs/metaworld.py's cam_pos[2]
TASK, BENCH = "pick-place-v3", "MT1"  # MT1: the benchmark LeRobot's env builds (fast)


def _preset() -> dict:
    return yaml.safe_load(PRESET.read_text())


def test_the_preset_declares_lerobots_conventions() -> None:
    p = _preset()
    assert p["kind"] == "lerobot"
    assert p["actions"] == {"space": "mocap_delta", "gripper": "pm1_open_neg"}
    spec = ObservationSpec.model_validate(p["observation"])
    assert list(spec.images) == ["observation.image"]
    assert spec.state == {"observation.state": ["metaworld_agent_pos"]}


@pytest.mark.reference
def test_corner4_is_lerobots_corner2() -> None:
    """LeRobot moves corner2 (camera 2 of every task) to (0.75, 0.075, 0.7): the package's
    own corner4, which has corner2's orientation and field of view."""
    model = compile_task(f"metaworld:{BENCH}/{TASK}").model
    c2, c4 = model.camera("corner2"), model.camera("corner4")
    assert c2.id == 2
    np.testing.assert_allclose(c4.pos, LEROBOT_CORNER2, atol=1e-12)
    np.testing.assert_allclose(c4.quat, c2.quat, atol=1e-12)
    assert c4.fovy[0] == c2.fovy[0] == 60.0
    assert model.cam_mode[c4.id] == model.cam_mode[c2.id] == 0  # fixed


@pytest.fixture(scope="module")
def lerobot_batch() -> dict[str, np.ndarray]:
    """The preset's observation of episode 0 (variation 0) right after reset."""
    compiled = compile_task(f"metaworld:{BENCH}/{TASK}")
    spec = ObservationSpec.model_validate(_preset()["observation"])
    env = MetasimVectorEnv(
        compiled, num_envs=1, action_space="mocap_delta", cameras=spec.views(compiled),
        autoreset=False,
    )  # fmt: skip
    try:
        obs, _ = env.reset(options={"env_ids": np.arange(1), "seeds": [0], "episodes": [0]})
        return spec.batch(obs, np.arange(1), task_description(TASK), compiled)
    finally:
        env.close()


@pytest.mark.reference
def test_the_preset_feeds_what_lerobots_env_feeds(
    lerobot_batch: dict[str, np.ndarray], mw_ref: MetaWorldRef
) -> None:
    """Keys, shapes and dtypes as LeRobot's env -> processor hands them (uint8 HWC image,
    float32 state); the image equals the package's corner2 frame with LeRobot's override,
    flipped on both axes, and no other orientation; the state is the package's obs[0:4]."""
    img, state = lerobot_batch["observation.image"], lerobot_batch["observation.state"]
    assert img.shape == (1, 480, 480, 3) and img.dtype == np.uint8
    assert state.shape == (1, 4) and state.dtype == np.float32
    raw = mw_ref.call(
        "frame", task=TASK, camera="corner2", width=480, height=480, cam_pos=LEROBOT_CORNER2,
        benchmark=BENCH, variation=0,
    )["frame"]  # fmt: skip
    lerobot = np.flip(raw, (0, 1))  # what LeRobot's MetaworldEnv returns for corner2
    assert psnr(img[0], lerobot) >= 35.0  # 42.9 dB measured
    for other in (img[0, ::-1], img[0, :, ::-1], img[0, ::-1, ::-1]):
        assert psnr(other, lerobot) < 20.0  # 11-12 dB measured
    obs = mw_ref.init_states(TASK, BENCH, variations=[0])["obs"][0]
    np.testing.assert_allclose(state[0], obs[:4], atol=1e-6)  # float32 of the same values


def test_lerobots_task_descriptions_are_read_from_lerobot() -> None:
    """Every MT50 task has LeRobot's description (read from the installed LeRobot), which
    is not metasim's own instruction (the env name's words)."""
    pytest.importorskip("lerobot")
    names = [r.removeprefix("metaworld:") for r in MetaworldSource().suites()["metaworld_mt50"]]
    assert set(names) <= set(task_descriptions())
    assert task_description(TASK) != "pick place"
    with pytest.raises(Exception, match="describes no task"):
        task_description("no-such-v3")


@pytest.mark.reference
def test_the_preset_sends_lerobots_description_as_the_task() -> None:
    """`task_text` of the preset: the scene's own instruction becomes LeRobot's
    description of the task (what LeRobot's MetaworldEnv sends); a perturbed instruction
    goes through as it is."""
    pytest.importorskip("lerobot")
    from metasim.metaworld.lerobot_tasks import lerobot_task_text
    from metasim.policies.adapter import load_task_text

    assert load_task_text(_preset()["task_text"]) is lerobot_task_text
    scene = MetaworldSource().load(f"metaworld:{TASK}")
    assert lerobot_task_text(scene, scene.task.instruction) == task_description(TASK)
    assert lerobot_task_text(scene, "slide the puck") == "slide the puck"
    with pytest.raises(MetasimInputError, match=r"policy\.task_text"):
        load_task_text("metasim.metaworld.lerobot_tasks:no_such_function")


@pytest.mark.reference
@pytest.mark.parametrize("task", ["window-open-v3", "drawer-open-v3"])
def test_the_first_state_is_the_packages_reset_observation(mw_ref: MetaWorldRef, task: str) -> None:
    """In the 7 tasks whose reset observation the package reads before the reset's last
    kinematics (`obs.RESET_FRAME_STALE`), the first `metaworld_agent_pos` is the package's
    reset obs[0:4] (what LeRobot's env feeds as agent_pos: the peer test, issue 31), not
    the reset state's own hand (the control: 5.4e-5 m off in window-open variation 3)."""
    compiled = compile_task(f"metaworld:MT10/{task}")
    env = MetasimVectorEnv(compiled, 1, action_space="mocap_delta", cameras=[], autoreset=False)
    try:
        obs, _ = env.reset(options={"env_ids": [0], "seeds": [0], "episodes": [3]})
        first = obs["policy"]["metaworld_agent_pos"][0]
        own = obs["privileged"]["metaworld_frame"][0][:4]
        obs, *_ = env.step(np.zeros((1, 4)))
        after = obs["policy"]["metaworld_agent_pos"][0]
        frame = obs["privileged"]["metaworld_frame"][0][:4]
    finally:
        env.close()
    want = mw_ref.init_states(task, "MT10", variations=[3])["obs"][0][:4]
    np.testing.assert_allclose(first, want, atol=1e-12)
    assert np.abs(own - want).max() > 1e-5  # the control: the state's frame is not it
    np.testing.assert_allclose(after, frame, atol=1e-12)  # later steps: the state's frame
