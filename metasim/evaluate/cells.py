"""A cell's share of a batch that runs several cells of one task side by side.

Cells whose scenes compile to the same model differ only in what the env applies per
world (their runtime noise), so their episodes can share one batched env: each slot runs
one episode of one cell at a time, with that cell's noise, and its record names the cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from metasim.envs.noise import RuntimeNoise
from metasim.scene.compile import CompiledScene
from metasim.scene.render_schema import BackgroundSpec


@dataclass(frozen=True)
class CellPart:
    """The episodes of one cell in a shared batch: the cell's id, its factor values (the
    records'), the runtime noise its worlds run with, and the episode indices to run."""

    cell: str
    factors: dict[str, Any]
    noise: RuntimeNoise
    episodes: tuple[int, ...]
    background: BackgroundSpec | None = None  # the scanned background its images show


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


__all__ = ["CellPart", "interleaved", "world_backgrounds"]
