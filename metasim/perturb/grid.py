"""Perturbation grids: factors, designs, and their expansion into seeded cells.

A grid YAML (perturbations/<name>.yaml) lists factors, each an axis (see axes.py) with
either discrete `levels` (the first is the nominal) or a continuous `range` with a
`nominal`, and a design:

- `factorial`: every combination of levels;
- `ofat`: one factor at a time around the nominal (the nominal cell, then each other
  level of each factor with the rest nominal);
- `random`, `lhs`, `sobol`: `samples` points drawn uniformly, by Latin hypercube or by a
  scrambled Sobol sequence over the ranges (discrete factors pick a level index).

Every cell has a stable id, its factor values, and a seed derived from the grid seed
and the cell index; the values are recorded on every episode the cell runs.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from scipy.stats import qmc

from metasim.envs.noise import RuntimeNoise
from metasim.errors import MetasimInputError
from metasim.paths import PERTURBATIONS
from metasim.perturb.axes import RUNTIME_AXES, SCENE_AXES, axis_names
from metasim.scene.schema import Scene


class Factor(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    axis: str
    target: str | None = None
    levels: Annotated[list[Any], Field(min_length=1)] | None = None
    range: tuple[float, float] | None = None
    nominal: float | None = None

    @model_validator(mode="after")
    def _check(self) -> Factor:
        if self.axis not in SCENE_AXES and self.axis not in RUNTIME_AXES:
            raise ValueError(f"unknown axis {self.axis!r}; expected one of {axis_names()}")
        if (self.levels is None) == (self.range is None):
            raise ValueError("give exactly one of 'levels' (discrete) or 'range' (continuous)")
        if self.range is not None:
            lo, hi = self.range
            if lo > hi:
                raise ValueError("range must be [low, high] with low <= high")
            nominal = self.nominal if self.nominal is not None else lo
            if not lo <= nominal <= hi:
                raise ValueError("nominal must lie inside range")
        return self

    @property
    def nominal_value(self) -> Any:
        if self.levels is not None:
            return self.levels[0]
        assert self.range is not None
        return self.nominal if self.nominal is not None else self.range[0]

    def value_at(self, u: float) -> Any:
        """The factor value at the unit-interval coordinate u (continuous designs)."""
        if self.levels is not None:
            return self.levels[min(int(u * len(self.levels)), len(self.levels) - 1)]
        assert self.range is not None
        lo, hi = self.range
        return float(lo + u * (hi - lo))


class Grid(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    description: str = ""
    design: Literal["factorial", "ofat", "random", "lhs", "sobol"] = "ofat"
    samples: Annotated[int, Field(ge=1, le=100000)] = 16
    seed: Annotated[int, Field(ge=0)] = 0
    factors: list[Factor] = []

    @model_validator(mode="after")
    def _check(self) -> Grid:
        names = [f.name for f in self.factors]
        if len(set(names)) != len(names):
            raise ValueError("factor names must be unique")
        if self.design in ("factorial", "ofat") and any(f.levels is None for f in self.factors):
            raise ValueError(f"design {self.design!r} needs 'levels' on every factor")
        return self


@dataclass(frozen=True)
class Cell:
    """One concrete setting of every factor. `values` maps factor name -> value."""

    id: str
    index: int
    values: dict[str, Any]
    seed: int

    @property
    def is_nominal(self) -> bool:
        return self.id == "nominal"


def _cell_id(values: dict[str, Any]) -> str:
    digest = hashlib.sha1(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()
    return digest[:10]


def expand(grid: Grid) -> list[Cell]:
    """The grid's cells, nominal first (when the design contains it)."""
    factors = grid.factors
    nominal = {f.name: f.nominal_value for f in factors}
    points: list[dict[str, Any]]
    if not factors:
        points = [{}]
    elif grid.design == "factorial":
        combos = itertools.product(*[f.levels or [] for f in factors])
        points = [dict(zip([f.name for f in factors], c, strict=True)) for c in combos]
    elif grid.design == "ofat":
        points = [dict(nominal)]
        for f in factors:
            for level in (f.levels or [])[1:]:
                points.append({**nominal, f.name: level})
    else:
        points = [dict(nominal)]
        for u in _unit_samples(grid.design, len(factors), grid.samples, grid.seed):
            points.append({f.name: f.value_at(float(x)) for f, x in zip(factors, u, strict=True)})
    cells: list[Cell] = []
    seen: set[str] = set()
    for values in points:
        cid = "nominal" if values == nominal else _cell_id(values)
        if cid in seen:
            continue
        seen.add(cid)
        seed = int(np.random.SeedSequence([grid.seed, len(cells)]).generate_state(1)[0])
        cells.append(Cell(id=cid, index=len(cells), values=values, seed=seed))
    return cells


def _unit_samples(design: str, dims: int, n: int, seed: int) -> np.ndarray:
    if design == "lhs":
        return np.asarray(qmc.LatinHypercube(d=dims, seed=seed).random(n))
    if design == "sobol":
        m = int(np.ceil(np.log2(max(n, 1))))
        return np.asarray(qmc.Sobol(d=dims, scramble=True, seed=seed).random_base2(m))[:n]
    return np.random.default_rng(seed).random((n, dims))


def apply_cell(scene: Scene, grid: Grid, cell: Cell) -> tuple[Scene, RuntimeNoise]:
    """The scene and the runtime noise of `cell` (scene re-validated after the change)."""
    noise = RuntimeNoise()
    for f in grid.factors:
        value = cell.values[f.name]
        if f.axis in RUNTIME_AXES:
            noise = RUNTIME_AXES[f.axis](noise, value)
        else:
            scene = SCENE_AXES[f.axis](scene, value, f.target)
    return Scene.model_validate(scene.model_dump(by_alias=True)), noise


def load_grid(name_or_path: str) -> Grid:
    """A grid by name (perturbations/<name>.yaml) or path; `none` is the empty grid."""
    if name_or_path in ("none", "nominal", ""):
        return Grid(name="none")
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = PERTURBATIONS / f"{name_or_path}.yaml"
    from metasim.yamlio import load_yaml, validate_yaml

    if not path.is_file():
        known = sorted(p.stem for p in PERTURBATIONS.glob("*.yaml"))
        raise MetasimInputError(
            "perturbation", [f"no grid {name_or_path!r} (looked at {path}); known: {known}"]
        )
    data = load_yaml(path, "perturbation grid")
    return validate_yaml(Grid, data, path, show_input=False)


def check_grid(grid: Grid, scenes: list[Scene], source: str) -> list[Cell]:
    """Expand the grid and apply every cell to every scene once, so a bad level is
    reported before anything runs (file, factor, value, why)."""
    cells = expand(grid)
    for cell in cells:
        for scene in scenes:
            try:
                apply_cell(scene, grid, cell)
            except (ValidationError, ValueError, KeyError, TypeError) as exc:
                msg = " ".join(str(exc).split())[:300]
                raise MetasimInputError(
                    source,
                    [f"cell {cell.values} cannot be applied to scene {scene.name!r}: {msg}"],
                ) from None
    return cells
