"""A cell's share of a batch that runs several cells of one task side by side.

Cells whose scenes compile to the same model differ only in what the env applies per
world (their runtime noise, their background's splats, their world cameras' and lights'
rows), so their episodes can share one batched env: each slot runs one episode of one
cell at a time, with that cell's noise, splat group and camera and light rows, and its
record names the cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from metasim.envs.noise import RuntimeNoise
from metasim.perturb.views import Row, row_index, view_data, view_rows
from metasim.scene.compile import CompiledScene
from metasim.scene.render_schema import BackgroundSpec
from metasim.sim import ModelEdit


@dataclass(frozen=True)
class CellPart:
    """The episodes of one cell in a shared batch: the cell's id, its factor values (the
    records'), the runtime noise its worlds run with, and the episode indices to run."""

    cell: str
    factors: dict[str, Any]
    noise: RuntimeNoise
    episodes: tuple[int, ...]
    background: BackgroundSpec | None = None  # the scanned background its images show
    views: dict[str, Any] | None = None  # its world cameras and lights (`view_data`)


def interleaved(parts: tuple[CellPart, ...]) -> list[tuple[int, int]]:
    """(part index, episode) pairs, episode by episode across the parts, so every cell
    advances together (records do not depend on the order)."""
    longest = max((len(p.episodes) for p in parts), default=0)
    return [
        (c, p.episodes[j])
        for j in range(longest)
        for c, p in enumerate(parts)
        if j < len(p.episodes)
    ]


def world_backgrounds(
    compiled: CompiledScene, parts: tuple[CellPart, ...], num_envs: int, renderer: str
) -> tuple[Any, list[int]]:
    """The splat groups of a batch of `num_envs` worlds that runs `parts` on the warp
    rig (each world starting in part 0's group), and the group of each part; (None, [])
    when the rig draws no splats (another renderer: OpenGL draws the mesh fallback, so
    the parts' images do not differ by background)."""
    if renderer != "warp" or all(p.background is None for p in parts):
        return None, []
    from metasim.sim.warp.splat_groups import SplatGroups, background_groups

    scenes = [compiled.scene.model_copy(update={"background": p.background}) for p in parts]
    groups = background_groups(scenes, compiled.base_dir)
    assert groups is not None
    per_part = [int(g) for g in groups.world_group]
    return SplatGroups(groups.groups, [per_part[0]] * num_envs, groups.fallback), per_part


class WorldViews:
    """The camera and light rows of a batch's worlds: `edits` (field, model index), the
    row of each edit per part (`rows[part][edit]`) and the worlds' current rows (each
    the model's own, `own[edit]`, in all `n` worlds at first)."""

    def __init__(self, edits: list[tuple[str, int]], rows: list[list[np.ndarray]],
                 own: list[np.ndarray], n: int) -> None:  # fmt: skip
        self.edits, self.rows = edits, rows
        self.table = [np.stack([row] * n) for row in own]

    def select(self, handler: Any, slots: np.ndarray, parts: list[int]) -> None:
        """Worlds `slots` take the rows of the parts `parts` (per-env model edits of
        `handler`, made where a row changes)."""
        for e, (field, index) in enumerate(self.edits):
            table = self.table[e].copy()
            table[slots] = np.stack([self.rows[p][e] for p in parts])
            if not np.array_equal(table, self.table[e]):
                self.table[e] = table
                handler.apply(ModelEdit(field, index, table))


def world_views(
    compiled: CompiledScene, parts: tuple[CellPart, ...], num_envs: int
) -> WorldViews | None:
    """The camera and light rows of a batch of `num_envs` worlds compiled as `compiled`
    that runs `parts` (each world starting with the model's own rows); None when every
    part draws the model's own cameras and lights."""
    drawn = view_data(compiled.scene)
    if all(p.views is None or p.views == drawn for p in parts):
        return None
    model = compiled.model
    own = view_rows(drawn)
    for key, row in own.items():  # compiled alone, the rows are the whole model's
        if not np.array_equal(row, getattr(model, key[0])[row_index(model, key)]):
            raise RuntimeError(f"{key}: the camera and light rows compiled alone differ "
                               "from the scene's model")  # fmt: skip
    rows = [own if p.views is None else view_rows(p.views) for p in parts]
    for p, r in zip(parts, rows, strict=True):
        if set(r) != set(own):
            raise ValueError(f"cell {p.cell}: its cameras and lights are not the batch's "
                             f"({sorted(set(r) ^ set(own))})")  # fmt: skip
    keys: list[Row] = [k for k in own if any(not np.array_equal(r[k], own[k]) for r in rows)]
    if not keys:
        return None
    edits = [(k[0], row_index(model, k)) for k in keys]
    return WorldViews(edits, [[r[k] for k in keys] for r in rows], [own[k] for k in keys],
                      num_envs)  # fmt: skip


__all__ = ["CellPart", "WorldViews", "interleaved", "world_backgrounds", "world_views"]
