"""Which cells of a grid run side by side as worlds of one batch, and the run's record
of it (manifest.json and summary.json, `cell_batches`).

Cells of a task whose scenes are equal once their scene factors are applied compile to
the same model: they differ only in runtime factors (state, image and action noise,
action latency), which the env applies per world (`metasim.envs.noise.WorldNoise`), so
their episodes share one batched env (`BatchShard`): one launch instead of one per cell.
A scanned background (the `background` axis) does not change the model either: on the
warp rig each world draws its cell's splat group (cells that all have splats with the
same mesh fallback share a batch, the fallback hidden in every world, as each alone
would hide it; cells without splats run apart); OpenGL draws no splats (the mesh
fallback in every cell, identical images), so there every background shares a batch.
A cell whose scene factors differ compiles to another model, which one batch cannot
hold: it runs in the batch of the cells with its own scene. Records are the same
either way (episode k has the same seed in every cell, drawn per episode, not per slot).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from metasim.evaluate.cells import CellPart, interleaved
from metasim.evaluate.config import EvalConfig
from metasim.evaluate.executors import BatchShard
from metasim.evaluate.plan import Plan, PlanItem
from metasim.perturb import RUNTIME_AXES

PER_WORLD = "applied per world: {names}"
BACKGROUND = {  # what a background factor is per world, by renderer
    "warp": "a splat group per world; cells with and without splats run apart",
    "opengl": "OpenGL draws no splats: every cell draws the mesh fallback",
}
REBUILT = (
    "scene factors {names} change the compiled scene: cells with other values of them "
    "run in another batch (a model rebuilt per batch)"
)


def scene_key(item: PlanItem, renderer: str | None) -> str:
    """What must be equal for two cells of a task to share a batch: their scene, except
    the background's splats (per world on the warp rig `renderer`, or not drawn)."""
    data = item.scene.model_dump(mode="json", by_alias=True)
    background = data.pop("background", None)
    if (renderer or item.scene.render.renderer) == "warp":
        data["background"] = background and {"fallback": background.get("fallback")}
    return json.dumps(data, sort_keys=True)


@dataclass
class CellBatches:
    """The batches of a run's (task, cell) items; empty when the run batches no cells
    (`off` says why, None when it was not asked to)."""

    batches: list[list[PlanItem]] = field(default_factory=list)
    member: dict[tuple[str, str], int] = field(default_factory=dict)
    factors: tuple[list[str], list[str]] = ([], [])  # (runtime, scene) factor names
    off: str | None = None

    @classmethod
    def of(cls, cfg: EvalConfig, plan: Plan) -> CellBatches:
        """Cells of each task grouped by their scene (`cfg.batch_cells`; the adaptive rule
        decides per cell, so it runs them one by one)."""
        if not cfg.batch_cells:
            return cls()
        if cfg.adaptive:
            return cls(
                off="adaptive=true stops each cell on its own interval: cells run one by one"
            )
        out = cls(factors=_factor_names(plan, cfg.render))
        keys: dict[tuple[str, str], int] = {}
        for item in plan.items():
            index = keys.setdefault((item.name, scene_key(item, cfg.render)), len(out.batches))
            if index == len(out.batches):
                out.batches.append([])
            out.batches[index].append(item)
            out.member[(item.name, item.cell.id)] = index
        return out

    def queue(self, runner: Any, item: PlanItem, block: int) -> bool:
        """Queue the batch of `item` on `runner` (a `_Runner`) when its first cell is
        reached; True when `item` runs in a batch of several cells (queued here)."""
        index = self.member.get((item.name, item.cell.id))
        if index is None or len(self.batches[index]) < 2:
            return False
        group = self.batches[index]
        if (group[0].name, group[0].cell.id) == (item.name, item.cell.id):
            parts = [_part(member, runner.results) for member in group]
            runner.pending.append(_shards(item, [p for p in parts if p.episodes], block, runner))
        return True

    def record(self) -> dict[str, Any] | None:
        """What the manifest and the summary say: which cells ran together and why the
        others did not (None when the run was not asked to batch cells)."""
        if self.off is not None:
            return {"batched": False, "why": self.off}
        if not self.member:
            return None
        runtime, scene = self.factors
        return {
            "batched": True,
            "per_world": PER_WORLD.format(names=", ".join(runtime) or "none"),
            "separate": REBUILT.format(names=scene) if scene else None,
            "batches": [
                {"task": g[0].name, "cells": [i.cell.id for i in g], "worlds": "shared"}
                if len(g) > 1
                else {"task": g[0].name, "cells": [g[0].cell.id], "worlds": "alone"}
                for g in self.batches
            ],
        }


def _factor_names(plan: Plan, renderer: str | None) -> tuple[list[str], list[str]]:
    """The grid's factors applied per world (a background's with what that means on
    `renderer`) and its scene factors."""
    per_world = [f.name for f in plan.grid.factors if f.axis in RUNTIME_AXES]
    for f in plan.grid.factors:
        if f.axis == "background":
            how = BACKGROUND.get(renderer or "", "by each scene's renderer: " + "; ".join(
                f"{k}: {v}" for k, v in BACKGROUND.items()))  # fmt: skip
            per_world.append(f"{f.name} ({how})")
    axes = (*RUNTIME_AXES.names(), "background")
    return per_world, [f.name for f in plan.grid.factors if f.axis not in axes]


def _part(item: PlanItem, results: dict[tuple[str, str], dict[int, bool]]) -> CellPart:
    """The episodes of `item` not recorded yet, as its share of a batch."""
    held = results.get((item.name, item.cell.id), {})
    todo = tuple(k for k in item.episodes if k not in held)
    return CellPart(item.cell.id, item.cell.values, item.noise, todo, item.scene.background)


def _shards(item: PlanItem, parts: list[CellPart], block: int, runner: Any) -> Iterator[BatchShard]:
    """The batch in shards of at most `block` episodes (all cells advancing together)."""
    pairs = iter(interleaved(tuple(parts)))
    while chunk := list(itertools.islice(pairs, block)):
        cells = tuple(
            replace(p, episodes=tuple(k for c, k in chunk if c == i)) for i, p in enumerate(parts)
        )
        yield BatchShard(
            scene=item.scene.model_dump(by_alias=True),
            source=str(item.task.path),
            cells=tuple(c for c in cells if c.episodes),
            spec=runner.cfg.rollout,
        )


__all__ = ["CellBatches", "scene_key"]
