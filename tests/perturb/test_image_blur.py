"""The `image_blur` runtime axis: a Gaussian blur of every camera image the policy gets
(before `image_noise`), deterministic, the physics untouched; images stay on the host."""

from __future__ import annotations

import numpy as np

from metasim.envs.device_images import device_refusal
from metasim.envs.noise import RuntimeNoise, WorldNoise, blur_images
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.perturb import RUNTIME_AXES
from metasim.tasks.seeds import episode_rng


def test_blur_of_an_impulse_is_the_gaussian():
    img = np.zeros((1, 21, 21, 3), np.uint8)
    img[0, 10, 10] = 255
    out = blur_images(img, 2.0).astype(np.float64)[0, :, :, 0]
    x = np.arange(21) - 10
    g = np.exp(-(x**2) / (2 * 2.0**2))
    want = 255 * np.outer(g, g) / g.sum() ** 2
    assert np.abs(out - want).max() <= 0.5 + 1e-9  # rounding to uint8 only
    assert out[10, 10] == out.max() and np.array_equal(out, out.T)
    np.testing.assert_array_equal(blur_images(img, 0.0), img)


def test_blur_runs_before_the_noise_and_only_on_images():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (2, 8, 8, 3), dtype=np.uint8)
    policy = {"front_rgb": images.copy(), "ee": np.ones((2, 3))}
    noise = WorldNoise([RuntimeNoise(image_blur=1.0, image_noise=3.0), RuntimeNoise()], 2)
    noise.start(np.arange(2), [5, 6], lambda: np.zeros((2, 7)))
    noise.observations({"policy": policy, "privileged": {}}, [])
    # env 0: its episode's pixel noise added to the blurred image; env 1: untouched
    draw = episode_rng(5, "runtime_noise").normal(0.0, 3.0, size=images.shape[1:])
    want = np.clip(blur_images(images[:1], 1.0)[0] + draw, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(policy["front_rgb"][0], want)
    np.testing.assert_array_equal(policy["front_rgb"][1], images[1])
    np.testing.assert_array_equal(policy["ee"], np.ones((2, 3)))
    assert policy["front_rgb"].dtype == np.uint8
    assert RUNTIME_AXES["image_blur"](RuntimeNoise(), 1.5) == RuntimeNoise(image_blur=1.5)


def test_blur_keeps_images_on_the_host_path():
    assert "blur" in device_refusal("warp", "warp", RuntimeNoise(image_blur=1.0))


def _frame(scene, noise):
    env = MetasimVectorEnv(scene, num_envs=1, cameras=("front",), noise=noise)
    obs, _ = env.reset(options={"env_ids": [0], "seeds": [3]})
    obs, *_ = env.step(np.array([[0.01, 0, 0, 0, 0, 0, 1.0]]))
    env.close()
    return np.asarray(obs["policy"]["front_rgb"][0], np.float64), obs["policy"]["joint_pos"][0]


def test_blur_reaches_the_camera_observation(lift_scene):
    clean, q0 = _frame(lift_scene, RuntimeNoise())
    blurred, q1 = _frame(lift_scene, RuntimeNoise(image_blur=1.5))
    again, _ = _frame(lift_scene, RuntimeNoise(image_blur=1.5))
    np.testing.assert_array_equal(q0, q1)  # the physics is not touched
    np.testing.assert_array_equal(blurred, again)  # no randomness in a blur
    assert np.abs(blurred - clean).mean() > 0.1
    # Less high-frequency energy: the sum of squared horizontal differences drops.
    assert np.square(np.diff(blurred, axis=1)).sum() < 0.6 * np.square(np.diff(clean, axis=1)).sum()
