"""The `background` grid axis: levels (a splat file, a mapping, none) applied to a
scene, bad levels refused naming the cell, and the worlds of a batch given the right
splat groups."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from metasim.errors import MetasimInputError
from metasim.perturb import Grid, apply_cell, check_grid
from metasim.scene import load_scene
from tests.scene.splat_scenes import write_scene


def _grid(levels: list) -> Grid:
    return Grid.model_validate(
        {
            "name": "rooms",
            "design": "factorial",
            "factors": [{"name": "room", "axis": "background", "levels": levels}],
        }
    )


def test_levels_set_the_scene_background(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # relative levels resolve against the working directory
    scene = load_scene(write_scene(tmp_path))
    levels = ["none", "blue.ply", {"splats": "green.ply", "pos": [1, 2, 3], "scale": 2.0}]
    grid = _grid(levels)
    cells = check_grid(grid, [scene], "rooms")
    assert [c.values["room"] for c in cells] == levels
    got = [apply_cell(scene, grid, c)[0].background for c in cells]
    assert got[0] is None
    assert got[1] is not None and got[1].splats == str(tmp_path / "blue.ply")
    assert got[1].pos == (0.0, 6.0, 2.0) and got[1].fallback == "wall"  # the scene's kept
    assert got[2] is not None and got[2].pos == (1.0, 2.0, 3.0) and got[2].scale == 2.0
    assert got[2].fallback == "wall"


@pytest.mark.parametrize(
    "level", ["missing.ply", "bad.ply", {"splats": "blue.ply", "fallback": "x"}]
)
def test_a_bad_level_is_refused_naming_the_cell(tmp_path: Path, monkeypatch, level) -> None:
    monkeypatch.chdir(tmp_path)
    scene = load_scene(write_scene(tmp_path))
    (tmp_path / "bad.ply").write_bytes(b"ply\nformat ascii 1.0\nend_header\n")
    with pytest.raises(MetasimInputError, match="cannot be applied to scene 'splat_probe'"):
        check_grid(_grid(["none", level]), [scene], "rooms")


def test_the_grid_expands_into_worlds_with_the_right_groups(tmp_path: Path, monkeypatch) -> None:
    """Worlds drawn as the cells of a background grid (two episodes per cell): one splat
    group per distinct background, each world the group of its cell."""
    pytest.importorskip("mujoco_warp", reason="the warp extra is not installed")
    from metasim.sim.warp.splat_groups import background_groups

    monkeypatch.chdir(tmp_path)
    scene = load_scene(write_scene(tmp_path, None))
    grid = _grid([{"splats": "green.ply", "pos": [0, 6, 2]}, "blue.ply", "none"])
    cells = check_grid(grid, [scene], "rooms")
    worlds = [apply_cell(scene, grid, c)[0] for c in cells for _ in range(2)]
    groups = background_groups(worlds, tmp_path)
    assert groups is not None
    assert groups.world_group.tolist() == [0, 0, 1, 1, 2, 2]
    colours = [g.rgba[0, :3].round(3).tolist() for g in groups.groups]
    assert colours[:2] == [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    assert groups.groups[2].rgba[0, 3] == 0.0  # the world without one: an invisible splat
    assert groups.fallback is None  # some world has no splats: its fallback is drawn
    args = groups.arguments()
    assert args["splat_adr"].tolist() == [0, 1, 2, 3]
    np.testing.assert_allclose(args["splat_position"][:2], [[0, 6, 2], [0, 0, 0]])
    assert background_groups([scene, scene], tmp_path) is None
