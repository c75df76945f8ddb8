"""Perturbation axes and grids: factors, designs, and seeded cells applied to scenes."""

from metasim.perturb.axes import RUNTIME_AXES, SCENE_AXES, axis_names
from metasim.perturb.grid import Cell, Factor, Grid, apply_cell, check_grid, expand, load_grid

__all__ = [
    "RUNTIME_AXES",
    "SCENE_AXES",
    "Cell",
    "Factor",
    "Grid",
    "apply_cell",
    "axis_names",
    "check_grid",
    "expand",
    "load_grid",
]
