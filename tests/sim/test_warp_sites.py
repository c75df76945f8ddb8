"""The warp rig draws the sites MuJoCo's OpenGL draws (`render.raytrace.sites`): groups
0-2 with a colour that is not transparent, each as a geom of the site's shape, size and
colour in a render model of the rig's own; the physics model and its trajectory stay as
they are (figures measured here in the comments; docs/rendering.md has Meta-World's).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("warp", reason="the warp extra (mujoco-warp, warp-lang) is not installed")
pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

import mujoco

from metasim.envs.vec_env import CameraView, MetasimVectorEnv
from metasim.reference.images import psnr
from metasim.scene.render_schema import RaytraceSpec
from metasim.sim.warp.gl_sites import drawn_sites, with_sites
from metasim.sim.warp.probe import render_model

pytestmark = pytest.mark.slow

SITES = Path(__file__).parents[1] / "data" / "render" / "sites.xml"
SIZE = (96, 96)


def _scene() -> tuple[mujoco.MjSpec, mujoco.MjModel, mujoco.MjData]:
    spec = mujoco.MjSpec.from_file(str(SITES))
    m = spec.compile()
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    return spec, m, d


def _opengl(m: mujoco.MjModel, d: mujoco.MjData) -> np.ndarray:
    with mujoco.Renderer(m, SIZE[1], SIZE[0]) as r:
        r.update_scene(d, camera="c")
        return r.render()


def _mask(img: np.ndarray, rgb: tuple[int, int, int]) -> np.ndarray:
    """Pixels of a saturated colour: the channels `rgb` marks high, the others low."""
    on = np.array(rgb, dtype=bool)
    x = img.astype(int)
    return (x[..., on].min(-1) > 90) & (x[..., ~on].max(-1) < 60 if (~on).any() else True)


def test_render_model_has_one_geom_per_drawn_site() -> None:
    spec, m, _ = _scene()
    assert [m.site(int(s)).name for s in drawn_sites(m)] == ["red", "green"]
    sg = with_sites(m, spec)
    assert sg is not None and sg.first == m.ngeom and sg.model.ngeom == m.ngeom + 2
    g = slice(sg.first, None)
    assert (sg.model.geom_contype[g] == 0).all() and (sg.model.geom_conaffinity[g] == 0).all()
    assert (sg.model.geom_type[g] == m.site_type[[0, 1]]).all()
    np.testing.assert_array_equal(sg.model.geom_size[g], m.site_size[[0, 1]])
    np.testing.assert_array_equal(sg.model.geom_rgba[g], m.site_rgba[[0, 1]])
    # every body keeps its mass and inertia (the site geoms' holder is massless)
    np.testing.assert_array_equal(sg.model.body_mass[: m.nbody], m.body_mass)
    np.testing.assert_array_equal(sg.model.body_inertia[: m.nbody], m.body_inertia)
    assert sg.model.body_mass[m.nbody] == 0.0


def test_sites_drawn_where_opengl_draws_them() -> None:
    spec, m, d = _scene()
    gl = _opengl(m, d)
    on = render_model(m, d, "c", SIZE, RaytraceSpec(), spec=spec)
    off = render_model(m, d, "c", SIZE, RaytraceSpec(sites=False), spec=spec)
    for colour in ((255, 0, 0), (0, 255, 0)):
        want, got = _mask(gl, colour), _mask(on, colour)
        assert want.sum() > 20, colour  # OpenGL shows the site
        assert (want & got).sum() / (want | got).sum() > 0.7, colour  # measured 0.9+
        assert not _mask(off, colour).any()
    assert not _mask(gl, (255, 255, 0)).any() and not _mask(on, (255, 255, 0)).any()
    # measured: with the sites 40.8 dB, without 25.3 dB (masks' overlap 0.96 and 0.91)
    assert psnr(gl, on) > 37.0
    assert psnr(gl, off) < 28.0


def test_physics_untouched_by_the_site_geoms() -> None:
    spec, m, d = _scene()
    sg = with_sites(m, spec)
    assert sg is not None
    d2 = mujoco.MjData(sg.model)
    for _ in range(200):  # the box falls, lands and settles
        mujoco.mj_step(m, d)
        mujoco.mj_step(sg.model, d2)
    assert d.qpos[2] < 0.2  # on the floor
    np.testing.assert_array_equal(d.qpos, d2.qpos)
    np.testing.assert_array_equal(d.qvel, d2.qvel)


@pytest.mark.parametrize("backend", ["mujoco", "warp"])
def test_rig_draws_sites_and_leaves_the_trajectory(backend: str) -> None:
    from metasim.scene import compile_file
    from metasim.sim.cameras import View

    compiled = compile_file(str(Path(__file__).parents[2] / "scenes" / "open_drawer.yaml"))
    assert len(drawn_sites(compiled.model))  # the cabinet's handle and inside sites
    cam = compiled.scene.cameras[0].name
    runs = {}
    for render in (True, False):
        views = [CameraView(cam, 64, 64)] if render else []
        env = MetasimVectorEnv(
            compiled, num_envs=2, backend=backend, cameras=views, render="warp", autoreset=False
        )
        try:
            env.reset(seed=0)
            rng = np.random.default_rng(0)
            low, high = env.controller.bounds()
            for _ in range(3):
                env.step((low + high) / 2 + (high - low) / 4 * rng.uniform(-1, 1, (2, len(low))))
                if render:
                    env.observe()
            state = env.handler.get_state()
            runs[render] = (state.qpos.copy(), state.qvel.copy())
            if render:  # the rig's site geoms where the physics puts the sites
                rig = env.handler.camera_rig([View(cam, 16, 16)], "warp")
                rig.render()
                sg = rig._sites
                assert sg is not None and rig._wm.ngeom == compiled.model.ngeom + len(sg.sites)
                geom_pos = rig._wd.geom_xpos.numpy()[:, sg.first :]
                site_pos = env.handler.kinematics().site_pos[:, sg.sites]
                np.testing.assert_allclose(geom_pos, site_pos, atol=1e-5)
        finally:
            env.close()
    np.testing.assert_array_equal(runs[True][0], runs[False][0])
    np.testing.assert_array_equal(runs[True][1], runs[False][1])
