"""Camera observations at the policy's resolution and resize mode; the python and HTTP
(OpenVLA) adapters end to end."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.errors import MetasimInputError
from metasim.evaluate.policy_io import camera_views
from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.policies.images import ImageSpec, fit_image
from metasim.policies.observation import ObservationSpec
from metasim.policies.transport.http_json import HttpActServer


def test_resize_modes_keep_what_they_promise():
    img = np.zeros((100, 200, 3), np.uint8)
    img[:, :100] = 255  # left half white
    pad = fit_image(img, (224, 224), "resize_with_pad")
    assert pad.shape == (224, 224, 3)
    assert pad[:56].max() == 0 and pad[-56:].max() == 0  # letterbox bars, top and bottom
    assert pad[112, :100].min() == 255 and pad[112, 124:].max() == 0
    crop = fit_image(img, (224, 224), "center_crop")
    assert crop.shape == (224, 224, 3)
    assert crop[:, :100].min() == 255 and crop[:, 124:].max() == 0  # the middle of the frame
    stretched = fit_image(img, (224, 224), "resize")
    assert stretched.shape == (224, 224, 3) and stretched[:, :100].min() == 255


def test_render_size_is_the_policy_resolution_not_the_camera_size():
    spec = ImageSpec(camera="front", size=(224, 224), resize="resize_with_pad")
    assert spec.render_size((256, 256)) == (224, 224)
    assert spec.render_size((640, 480)) == (224, 168)
    crop = ImageSpec(camera="front", size=(224, 224), resize="center_crop")
    assert crop.render_size((640, 480)) == (299, 224)
    assert ImageSpec(camera="front").render_size((640, 480)) == (640, 480)


def test_rotation_and_layout():
    img = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(1, 2, 3, 3)
    rot = ImageSpec(camera="c", rotate=180).finish(img)
    np.testing.assert_array_equal(rot[0], img[0, ::-1, ::-1])
    chw = ImageSpec(camera="c", layout="chw_float").finish(img)
    assert chw.shape == (1, 3, 2, 3) and chw.dtype == np.float32 and chw.max() <= 1.0


def test_env_renders_the_views_a_policy_declares(lift_scene):
    opts = {
        "observation": {
            "images": {
                "observation/image": {"camera": "front", "size": [224, 224]},
                "observation/wrist_image": {
                    "camera": "wrist",
                    "size": [96, 96],
                    "rotate": 180,
                    "depth": True,
                },
            },
            "state": {"observation/state": ["ee_pos", "ee_rot:euler_xyz", "gripper:pm1_open_neg"]},
        }
    }
    views = camera_views(lift_scene, ObservationSpec.model_validate(opts["observation"]))
    assert [(v.camera, v.width, v.height, v.depth) for v in views] == [
        ("front", 224, 224, False),
        ("wrist", 96, 96, True),
    ]
    env = MetasimVectorEnv(lift_scene, num_envs=2, cameras=views, autoreset=False)
    obs, _ = env.reset(options={"env_ids": np.arange(2), "seeds": [1, 2]})
    spec = ObservationSpec.model_validate(opts["observation"])
    req = spec.batch(obs, np.arange(2), "pick up the red cube", lift_scene)
    assert req["observation/image"].shape == (2, 224, 224, 3)
    assert req["observation/image"].dtype == np.uint8 and req["observation/image"].std() > 5
    assert req["observation/wrist_image"].shape == (2, 96, 96, 3)
    depth = req["observation/wrist_image_depth"]
    assert depth.shape == (2, 96, 96) and 0.0 < np.median(depth) < 2.0  # metres
    state = req["observation/state"]
    assert state.shape == (2, 7) and state.dtype == np.float32
    np.testing.assert_allclose(state[:, :3], obs["policy"]["ee_pos"], atol=1e-6)
    np.testing.assert_allclose(state[:, 6], -1.0, atol=1e-3)  # open gripper in LIBERO's sign
    assert req["prompt"] == ["pick up the red cube"] * 2
    # the same frame at the camera's own size, resized, is close to the direct render
    full = env.handler.render("front", width=256, height=256)
    resized = np.stack([fit_image(f, (224, 224), "resize") for f in full])
    assert np.abs(resized.astype(int) - req["observation/image"].astype(int)).mean() < 12
    env.close()


def test_unknown_camera_is_a_config_error(lift_scene):
    opts = {"observation": {"images": {"img": {"camera": "nope"}}}}
    with pytest.raises(MetasimInputError, match="no camera 'nope'"):
        list(run_task(lift_scene, RolloutSpec.of("scripted", opts, seed=0, num_envs=1), 1))


def test_python_entry_point_runs_a_metasim_policy_in_process(lift_scene):
    base = sorted(
        (r.episode, r.success, r.steps)
        for r in run_task(lift_scene, RolloutSpec.of("scripted", seed=2, num_envs=2), 4)
    )
    opts = {
        "target": "metasim.policies.serving:MetasimSession",
        "args": {"kind": "scripted"},
        "observation": {"raw": True},
    }
    got = sorted(
        (r.episode, r.success, r.steps)
        for r in run_task(lift_scene, RolloutSpec.of("python", opts, seed=2, num_envs=2), 4)
    )
    assert got == base


class Recorder:
    """An OpenVLA-style server double: records what it was sent, answers a fixed action
    (roll/pitch/yaw deltas, gripper open) that lifts the end effector 1 cm a step."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, payload: dict[str, Any]) -> np.ndarray:
        with self.lock:
            self.seen.append(payload)
        return np.array([0.0, 0.0, 0.01, 0.0, 0.0, 0.0, 1.0], dtype=np.float32)


@pytest.mark.slow
def test_openvla_http_adapter_sends_images_and_instruction(lift_scene):
    rec = Recorder()
    with HttpActServer(rec) as server:
        opts = {
            "url": server.url,
            "unnorm_key": "bridge_orig",
            "observation": {
                "images": {"image": {"camera": "front", "size": [224, 224], "resize": "resize"}},
                "prompt": "instruction",
            },
            "actions": {"space": "ee_delta", "rotation": "euler_xyz", "gripper": "open1"},
        }
        records = list(
            run_task(lift_scene, RolloutSpec.of("http", opts, seed=0, num_envs=1, execute=1), 1)
        )
    assert records[0].error is None and not records[0].success
    first = rec.seen[0]
    assert first["image"].shape == (224, 224, 3) and first["image"].dtype == np.uint8
    assert first["instruction"] == "pick up the red cube"
    assert first["unnorm_key"] == "bridge_orig"
    assert len(rec.seen) == records[0].steps  # one request per step, one action each
