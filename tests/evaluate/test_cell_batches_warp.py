"""Background cells as worlds of one batch on the warp rig: each world draws its cell's
splat group, and its images are the images of that cell run alone (Warp's CPU device)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

from metasim.envs.noise import RuntimeNoise
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.cells import CellPart, world_backgrounds
from metasim.perturb import Grid, apply_cell, check_grid
from metasim.scene import compile_scene, load_scene
from tests.scene.splat_scenes import write_scene

pytestmark = pytest.mark.slow


def _images(env: MetasimVectorEnv) -> np.ndarray:
    obs, _ = env.reset(options={"episodes": list(range(env.num_envs))})
    return np.asarray(obs["policy"]["cam_rgb"])


def test_each_world_draws_its_cells_background(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write_scene(tmp_path, None)
    scene = load_scene(path)
    levels = [
        {"splats": f, "pos": [0, 6, 2], "fallback": "wall"} for f in ("blue.ply", "green.ply")
    ]
    factor = {"name": "room", "axis": "background", "levels": levels}
    grid = Grid.model_validate({"name": "rooms", "design": "factorial", "factors": [factor]})
    cells = check_grid(grid, [scene], "rooms")
    scenes = [apply_cell(scene, grid, c)[0] for c in cells]
    alone = []
    for s in scenes:
        env = MetasimVectorEnv(compile_scene(s, source=path), cameras=["cam"], render="warp")
        alone.append(_images(env)[0])
        env.close()
    assert not np.array_equal(alone[0], alone[1])  # the two rooms look different
    compiled = compile_scene(scenes[0], source=path)
    parts = tuple(
        CellPart(c.id, c.values, RuntimeNoise(), (0,), s.background)
        for c, s in zip(cells, scenes, strict=True)
    )
    env = MetasimVectorEnv(compiled, num_envs=3, cameras=["cam"], render="warp")
    try:
        env.backgrounds, groups = world_backgrounds(compiled, parts, 3, "warp")
        env.select_backgrounds([0, 1, 2], [groups[1], groups[0], groups[1]])  # before the rig
        img = _images(env)
        for world, cell in enumerate([1, 0, 1]):
            np.testing.assert_array_equal(img[world], alone[cell])
        env.select_backgrounds([1], [groups[1]])  # the rig exists: swapped in place
        np.testing.assert_array_equal(_images(env)[1], alone[1])
    finally:
        env.close()
