"""The run plan: which (task, cell) pairs a config runs, each with its cell's scene, its
runtime noise and its episode indices, planned once for `metasim eval`, `metasim collect`
and `metasim report`'s video replays.

`Plan.of(cfg)` resolves every task reference through the task-source registry
(metasim.scene.sources) and loads every scene, loads the perturbation grid and applies
each cell to each scene once, so a bad task or level is reported before anything runs.
`Plan.items()` then yields one `PlanItem` per task x cell in run order (tasks in suite
order, cells in grid order), each cell's scene made only when its item is reached.
Episode k of every task and cell starts from `episode_seed(cfg.seed, k)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from metasim.envs.noise import RuntimeNoise
from metasim.errors import MetasimInputError
from metasim.evaluate.config import EvalConfig
from metasim.evaluate.executors import Shard
from metasim.evaluate.spec import RolloutSpec
from metasim.perturb import Cell, Grid, apply_cell, check_grid, load_grid
from metasim.scene.compile import CompiledScene
from metasim.scene.prebuilt_format import SUFFIX
from metasim.scene.schema import Scene
from metasim.scene.sources import Task


@dataclass(frozen=True)
class PlanItem:
    """One task in one cell: the cell's scene (the recipe a worker compiles), its
    runtime noise and the episodes the config asks for (some may be recorded already:
    the consumer skips those). The cell is applied when first asked for, so a queued
    item holds only the task's scene."""

    task: Task
    base: Scene  # the task's own scene
    grid: Grid
    cell: Cell
    episodes: range

    @property
    def name(self) -> str:
        """The scene's name: the episode records' `task`."""
        return self.base.name

    @cached_property
    def _applied(self) -> tuple[Scene, RuntimeNoise]:
        return apply_cell(self.base, self.grid, self.cell)

    @property
    def scene(self) -> Scene:
        """The task's scene with the cell's scene factors applied."""
        return self._applied[0]

    @property
    def noise(self) -> RuntimeNoise:
        """The cell's runtime factors (applied by the env at every step)."""
        return self._applied[1]

    def compile(self) -> CompiledScene:
        """The cell's scene compiled here (collect's recorder needs the model)."""
        return self.task.compile(self.scene)

    def shard(self, episodes: tuple[int, ...], spec: RolloutSpec) -> Shard:
        """The picklable unit an executor runs: `episodes` of this task and cell."""
        return Shard(
            scene=self.scene.model_dump(by_alias=True),
            source=str(self.task.path),
            episodes=episodes,
            noise=self.noise,
            cell=self.cell.id,
            factors=self.cell.values,
            spec=spec,
        )


@dataclass(frozen=True)
class Plan:
    """Tasks (resolved and loaded, suite order) x cells (grid order) x episodes."""

    grid: Grid
    tasks: list[tuple[Task, Scene]]
    cells: list[Cell]
    episodes: int

    @classmethod
    def of(cls, cfg: EvalConfig) -> Plan:
        """The plan of a config; bad tasks or grid levels are input errors."""
        grid = load_grid(cfg.perturbation)
        loaded = [(t, t.scene()) for t in cfg.tasks()]  # every scene is checked before any runs
        cells = check_grid(grid, [s for _, s in loaded], f"perturbation {cfg.perturbation!r}")
        _check_prebuilt(grid, loaded, cells, cfg.perturbation)
        return cls(grid, loaded, cells, cfg.episodes)

    @property
    def names(self) -> list[str]:
        """The tasks' scene names, in suite order."""
        return [s.name for _, s in self.tasks]

    @property
    def cell_ids(self) -> list[str]:
        return [c.id for c in self.cells]

    def items(self) -> Iterator[PlanItem]:
        """Every task x cell, tasks outermost; each cell's scene made when reached."""
        for task, scene in self.tasks:
            for cell in self.cells:
                yield self.item_of(task, scene, cell)

    def item_of(self, task: Task, scene: Scene, cell: Cell) -> PlanItem:
        return PlanItem(task, scene, self.grid, cell, range(self.episodes))

    def item(self, name: str, cell_id: str, factors: dict[str, Any] | None = None) -> PlanItem:
        """The item of task `name` in cell `cell_id` (a replay of a recorded episode).
        A cell the grid no longer expands to is rebuilt from the recorded `factors`."""
        found = [(t, s) for t, s in self.tasks if s.name == name]
        if not found:
            raise KeyError(f"the run's suite has no task {name!r} any more")
        task, scene = found[0]
        cell = next((c for c in self.cells if c.id == cell_id), None)
        if cell is None:
            cell = Cell(id=cell_id, index=0, values=dict(factors or {}), seed=0)
        return self.item_of(task, scene, cell)


def _check_prebuilt(
    grid: Grid, loaded: list[tuple[Task, Scene]], cells: list[Cell], perturbation: str
) -> None:
    """A prebuilt task runs its exported model as it is (`compile.load_prebuilt`): a cell
    that changes its scene (a factor that rebuilds the model: object scale, a texture)
    is refused here, before any cell runs or any folder is written, naming the first."""
    for task, scene in loaded:
        if not task.path.name.endswith(SUFFIX):
            continue
        held = scene.model_dump(mode="json", by_alias=True)
        for cell in cells:
            if apply_cell(scene, grid, cell)[0].model_dump(mode="json", by_alias=True) != held:
                nominal = {f.name: f.nominal_value for f in grid.factors}
                moved = {k: v for k, v in cell.values.items() if nominal.get(k) != v}
                values = ", ".join(f"{k}={v}" for k, v in (moved or cell.values).items())
                raise MetasimInputError(
                    f"perturbation {perturbation!r}",
                    [
                        f"cell {cell.id} ({values}) changes the scene of the prebuilt task "
                        f"{task.ref!r} ({task.path}), whose model was exported as it is; a "
                        "prebuilt task takes only factors applied as per-env model edits "
                        "(physics) or at run time"
                    ],
                    "Run the grid on the task itself (its benchmark's package installed), or "
                    "a grid without the factors that rebuild the model",
                )
