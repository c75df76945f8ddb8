"""MuJoCo Warp's ray tracer as the camera renderer (`render: warp`), on Warp's CPU device.

Every camera view of a batch comes out of one rig call with the arrays OpenGL gives
(uint8 (B, H, W, 3), float32 depth), on the native backend (state copied into the rig's
own MuJoCo Warp data) and on the warp backend (its device data); per-env lighting edits
reach each world's image and leave the physics alone. Image parity against OpenGL is
measured by bench/render_parity.py (docs/rendering.md), not asserted here beyond a floor.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("warp", reason="the warp extra (mujoco-warp, warp-lang) is not installed")
pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

from metasim.bench.image_parity import psnr
from metasim.envs.vec_env import CameraView, MetasimVectorEnv
from metasim.sim import ModelEdit
from metasim.sim.cameras import View
from metasim.sim.warp.cameras import view_groups

pytestmark = pytest.mark.slow

# lift_cube's front camera, ray traced vs OpenGL at 64x64 after a few steps: ~24 dB here
# (the ray tracer has no OpenGL reflections and no per-vertex lighting); a broken rig
# (wrong camera, wrong pose, wrong channel order) gives < 12 dB
PSNR_FLOOR = 16.0


def _env(lift_scene: Any, backend: str, render: str, n: int = 2) -> MetasimVectorEnv:
    cams = [c.name for c in lift_scene.scene.cameras]
    views = [CameraView(cams[0], 64, 48), CameraView(cams[-1], 32, 32, depth=True)]
    return MetasimVectorEnv(
        lift_scene, num_envs=n, backend=backend, cameras=views, render=render, autoreset=False
    )


def test_view_groups_split_a_camera_asked_twice() -> None:
    views = [
        View("a", 8, 8),
        View("b", 8, 8),
        View("a", 16, 16),
        View("a", 8, 8, depth=True),  # shares the colour view's target
    ]
    assert view_groups(views) == [[("a", 8, 8), ("b", 8, 8)], [("a", 16, 16)]]


@pytest.mark.parametrize("backend", ["mujoco", "warp"])
def test_observation_images_match_opengl_shapes(lift_scene, backend) -> None:
    envs = {r: _env(lift_scene, backend, r) for r in ("opengl", "warp")}
    try:
        obs = {}
        for r, env in envs.items():
            env.reset(seed=3)
            hold = np.zeros((env.num_envs, env.controller.dim))
            for _ in range(3):
                env.step(hold)
            obs[r] = env.observe()["policy"]
        keys = [k for k in obs["opengl"] if k.endswith(("_rgb", "_depth"))]
        assert len(keys) == 3
        for k in keys:
            gl, rt = obs["opengl"][k], obs["warp"][k]
            assert rt.shape == gl.shape and rt.dtype == gl.dtype, k
        rgb = next(k for k in keys if k.endswith("_rgb"))
        assert psnr(obs["opengl"][rgb], obs["warp"][rgb]) > PSNR_FLOOR
        depth = next(k for k in keys if k.endswith("_depth"))
        hit = obs["warp"][depth] > 0  # the ray tracer's misses are 0
        assert hit.mean() > 0.5
        err = np.abs(obs["warp"][depth][hit] - obs["opengl"][depth][hit])
        assert np.median(err) < 0.01  # metres, both planar depth
    finally:
        for env in envs.values():
            env.close()


@pytest.mark.parametrize("backend", ["mujoco", "warp"])
def test_per_world_lighting_changes_images_not_physics(lift_scene, backend) -> None:
    """Two worlds from one state: dimming world 1's lights changes world 1's image only,
    and both worlds step identically."""
    env = _env(lift_scene, backend, "warp")
    try:
        env.reset(seed=0)
        h = env.handler
        state = h.get_state().take([0, 0])
        h.set_state(state)
        m = h.model
        for light in range(m.nlight):
            rows = np.stack([m.light_diffuse[light], 0.2 * m.light_diffuse[light]])
            h.apply(ModelEdit("light_diffuse", light, rows))
        h.apply(ModelEdit("geom_rgba", 0, np.stack([m.geom_rgba[0], [1.0, 0.0, 0.0, 1.0]])))
        actions = np.tile(np.linspace(-0.5, 0.5, env.controller.dim), (2, 1))
        for _ in range(3):
            env.step(actions)
        obs = env.observe()["policy"]
        rgb = obs[next(k for k in obs if k.endswith("_rgb"))]
        assert rgb[0].mean() > rgb[1].mean() + 5  # world 1 is darker
        after = h.get_state()
        np.testing.assert_array_equal(after.qpos[0], after.qpos[1])
        np.testing.assert_array_equal(after.qvel[0], after.qvel[1])
    finally:
        env.close()


def test_rig_made_after_an_edit_replays_it(lift_scene) -> None:
    """A rig made after a per-env edit (e.g. fixture poses placed at reset, before the
    first observation) draws each world with it."""
    env = _env(lift_scene, "mujoco", "warp")
    try:
        env.reset(seed=0)
        h = env.handler
        h.set_state(h.get_state().take([0, 0]))
        m = h.model
        for light in range(m.nlight):
            rows = np.stack([m.light_diffuse[light], 0.0 * m.light_diffuse[light]])
            h.apply(ModelEdit("light_diffuse", light, rows))
        rgb = env.images()
        img = rgb[next(k for k in rgb if k.endswith("_rgb"))]
        assert img[0].mean() > img[1].mean() + 5
    finally:
        env.close()


CUBE_BOX = """<mujoco><visual>
<headlight ambient="0.5 0.5 0.5" diffuse="0.5 0.5 0.5" specular="0 0 0"/></visual>
<asset><texture name="t" type="cube" builtin="checker" rgb1="1 0 0" rgb2="0 0 1"
width="32" height="32"/><material name="m" texture="t" specular="0"/></asset><worldbody>
<geom type="box" size="0.7 0.4 0.03" material="m"/>
<camera name="c" pos="0 0 3" xyaxes="1 0 0 0 1 0" fovy="40"/></worldbody></mujoco>"""


def test_a_six_face_cube_texture_shows_one_face_per_box_face() -> None:
    """MuJoCo Warp samples a cube texture stored as six identical faces as one 2D image
    (six squeezed copies on every box face); the rig gives it one face, as OpenGL maps it."""
    import mujoco
    import mujoco_warp as mjw
    import warp as wp

    from metasim.sim.warp.cameras import single_face_cubes

    spec = mujoco.MjSpec.from_string(CUBE_BOX)
    tex = spec.textures[0]  # six identical checker faces, as one file on every face gives
    face = np.zeros((32, 32, 3), np.uint8)
    face[:16, :16] = face[16:, 16:] = (255, 0, 0)
    face[:16, 16:] = face[16:, :16] = (0, 0, 255)
    tex.builtin, tex.width, tex.height, tex.nchannel = 0, 32, 6 * 32, 3
    tex.data = np.tile(face, (6, 1, 1)).tobytes()
    m = spec.compile()
    assert m.tex_height[0] == 6 * m.tex_width[0]
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    with mujoco.Renderer(m, 32, 32) as r:
        r.update_scene(d, camera="c")
        gl = r.render()
    wp.init()
    with wp.ScopedDevice("cpu"):
        wm, wd = mjw.put_model(m), mjw.put_data(m, d)
        images = {}
        for fix in (False, True):
            rc = mjw.create_render_context(m, cam_res=[(32, 32)], render_rgb=[True])
            if fix:
                assert single_face_cubes(m, rc) == 1
            mjw.refit_bvh(wm, wd, rc)
            mjw.render(wm, wd, rc)
            px = rc.rgb_data.numpy().view(np.uint8).reshape(-1, 4)[: 32 * 32]
            images[fix] = px.reshape(32, 32, 4)[..., 2::-1]
    assert psnr(gl, images[True]) > psnr(gl, images[False]) + 5


def test_scene_render_writes_the_same_files_either_way(tmp_path, capsys) -> None:
    from metasim.cli.main import main

    names = {}
    for r in ("opengl", "warp"):
        out = tmp_path / r
        argv = ["scene", "render", "lift_cube", "--out", str(out), "--render", r]
        assert main([*argv, "--size", "40", "24"]) == 0
        names[r] = sorted(p.name for p in out.iterdir())
        assert f", {r})" in capsys.readouterr().out
    assert names["opengl"] == names["warp"] and len(names["warp"]) >= 2


@pytest.mark.parametrize(
    "argv",
    [
        ["scene", "render", "lift_cube", "--out", "o", "--render", "vulkan"],
        ["scene", "render", "lift_cube", "--out", "o", "--size", "0", "24"],
        ["bench", "cameras", "--render", "vulkan"],
        ["bench", "cameras", "--render", "warp", "--spp", "9"],
    ],
)
def test_bad_render_options_exit_2(capsys, argv) -> None:
    from tests.cli_refusal import refused

    refused(capsys, argv)


def test_bench_cameras_warp_prints_frames_per_second(capsys) -> None:
    import json

    from metasim.cli.main import main

    argv = ["bench", "cameras", "--render", "warp", "--num-envs", "2", "--repeats", "1"]
    assert main([*argv, "--size", "32", "32", "--spp", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["render"] == "warp" and out["raytrace"]["samples_per_pixel"] == 1
    assert out["metasim_fps"] > 0 and out["bare_fps"] > 0
