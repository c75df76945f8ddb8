"""Scanned backgrounds drawn by the warp rig (MuJoCo Warp's Gaussian splats, on Warp's
CPU device): the splats where they should be, composited behind a mesh, the mesh
fallback hidden there and drawn by OpenGL instead; per-world splat groups give each
world its background and leave the physics alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("warp", reason="the warp extra (mujoco-warp, warp-lang) is not installed")
pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

from metasim.perturb import Grid, apply_cell, check_grid
from metasim.scene import compile_file, load_scene
from metasim.scene.render_schema import RaytraceSpec
from metasim.sim import get_backend
from metasim.sim.cameras import View
from metasim.sim.warp.cameras import WarpRig
from metasim.sim.warp.splat_groups import SplatGroups, background_groups
from metasim.splats import read_splat_ply
from tests.scene.splat_scenes import write_scene

pytestmark = pytest.mark.slow

N = 24  # image side; the camera looks at the background's centre
CENTRE, OFF = (N // 2, N // 2), (N // 2, N // 2 - 3)  # the box; the splat beside it
CORNER = (1, 1)  # the splat's faint edge: before the fallback wall (OpenGL), or nothing
VIEW = [View("cam", N, N)]


def _handler(path: Path, backend: str = "mujoco", n: int = 2):
    compiled = compile_file(str(path))
    options = {"device": "cpu"} if backend == "warp" else {}
    return get_backend(backend)(compiled, n, **options)


@pytest.mark.parametrize("backend", ["mujoco", "warp"])
def test_splats_are_drawn_behind_the_mesh_and_hide_the_fallback(tmp_path, backend) -> None:
    h = _handler(write_scene(tmp_path), backend)
    try:
        rig = h.camera_rig(VIEW, "warp", RaytraceSpec())
        img = rig.render()[0][0].astype(int)
        r, g, b = img[OFF]
        assert g > 200 and r < 10 and b < 10  # the splat's green
        r, g, b = img[CENTRE]
        assert r > 200 and g < 100 and b < 100  # the red box in front of it
        assert img[CORNER][[0, 2]].max() < 10  # the fallback wall is hidden: no grey
        gl = h.render("cam", width=N, height=N)[0].astype(int)
        assert gl[OFF][1] < 200 and abs(gl[OFF][0] - gl[OFF][1]) < 10  # OpenGL: grey wall
        assert abs(gl[CORNER][0] - gl[CORNER][2]) < 10 and gl[CORNER].max() > 50
    finally:
        h.close()


def test_without_a_background_the_context_has_no_splats(tmp_path) -> None:
    h = _handler(write_scene(tmp_path, None))
    try:
        rig = h.camera_rig(VIEW, "warp", RaytraceSpec())
        assert isinstance(rig, WarpRig) and rig.backgrounds is None
        assert all(rc.splat_count == 0 for rc in rig._contexts)
        img = rig.render()[0][0].astype(int)
        assert abs(img[OFF][0] - img[OFF][1]) < 10  # the grey wall, no green
    finally:
        h.close()


@pytest.mark.parametrize("backend", ["mujoco", "warp"])
def test_two_worlds_two_groups_different_images_same_physics(tmp_path, backend) -> None:
    h = _handler(write_scene(tmp_path, None), backend)
    try:
        at, rot = np.array([0.0, 6.0, 2.0]), np.array([1.0, 0.0, 0.0, 0.0])
        groups = [
            read_splat_ply(tmp_path / f).transformed(at, rot) for f in ("green.ply", "blue.ply")
        ]
        rig = WarpRig(h, VIEW, RaytraceSpec(), SplatGroups(groups, [0, 1], "wall"))
        h._rigs.append(rig)
        state = h.get_state().take([0, 0])
        h.set_state(state)
        ctrl = np.tile(np.linspace(-0.3, 0.3, h.model.nu), (2, 1))
        for _ in range(3):
            h.step(ctrl)
        img = rig.render()[0].astype(int)
        assert img[0][OFF][1] > 200 and img[0][OFF][2] < 10  # world 0: green room
        assert img[1][OFF][2] > 200 and img[1][OFF][1] < 10  # world 1: blue room
        np.testing.assert_array_equal(img[0][CENTRE], img[1][CENTRE])  # the same box
        after = h.get_state()
        np.testing.assert_array_equal(after.qpos[0], after.qpos[1])
        np.testing.assert_array_equal(after.qvel[0], after.qvel[1])
        rig.select_backgrounds([1, 0])  # swapped without rebuilding the context
        swapped = rig.render()[0]
        np.testing.assert_array_equal(swapped[0], img[1])
        np.testing.assert_array_equal(swapped[1], img[0])
    finally:
        h.close()


def test_a_background_grid_renders_each_world_in_its_cell(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write_scene(tmp_path, None)
    scene = load_scene(path)
    levels = [
        {"splats": f, "pos": [0, 6, 2], "fallback": "wall"} for f in ("blue.ply", "green.ply")
    ]
    factor = {"name": "room", "axis": "background", "levels": levels}
    grid = Grid.model_validate({"name": "rooms", "design": "factorial", "factors": [factor]})
    cells = check_grid(grid, [scene], "rooms")
    worlds = [apply_cell(scene, grid, c)[0] for c in cells]
    h = _handler(path, n=len(worlds))
    try:
        groups = background_groups(worlds, tmp_path)
        assert groups is not None and groups.fallback == "wall"
        img = WarpRig(h, VIEW, RaytraceSpec(), groups).render()[0].astype(int)
        assert img[0][OFF][2] > 200 and img[1][OFF][1] > 200
        assert img[0][CORNER][0] < 10 and img[1][CORNER][0] < 10  # fallback hidden: no grey
    finally:
        h.close()
