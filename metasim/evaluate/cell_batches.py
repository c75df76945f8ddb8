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

World cameras' poses and lights (the camera and light axes, `metasim.perturb.views`) do
not change the model either, on the backends whose handlers take any per-env model row
(mujoco, warp): each world gets its cell's camera and light rows as per-env model edits,
drawn per world by the warp rig and by OpenGL (each env's model). A camera's field of
view is per world as well where the renderer reads it per world: OpenGL, and the warp
rig with OpenGL's shading order (one precomputed ray set per field of view); with
MuJoCo Warp's own shading (`render.raytrace.shading: warp`) its rays are precomputed
from the model's, so cells with another field of view run in another batch.
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
from metasim.perturb.views import FOV_AXES, VIEW_AXES, view_data, view_key

PER_WORLD = "applied per world: {names}"
BACKGROUND = {  # what a background factor is per world, by renderer
    "warp": "a splat group per world; cells with and without splats run apart",
    "opengl": "OpenGL draws no splats: every cell draws the mesh fallback",
}
VIEWS = {  # what a camera pose or light factor is per world, by renderer
    "warp": "camera and light rows per world",
    "opengl": "camera and light rows in each env's model",
}
FOV = {  # and a field of view factor
    "warp": "a precomputed ray set per field of view",
    "opengl": "camera rows in each env's model",
}
REBUILT = (
    "scene factors {names} change the compiled scene: cells with other values of them "
    "run in another batch (a model rebuilt per batch)"
)
VIEWS_APART = {  # why camera and light factors run in batches of their own
    "backend": "the {backend} backend takes no per-env camera or light rows",
    "fov": "MuJoCo Warp's own shading (render.raytrace.shading=warp) precomputes one ray "
    "set from the model's field of view",
}
PER_ENV_BACKENDS = ("mujoco", "warp")  # handlers that take any per-env model row


def views_per_world(item: PlanItem, renderer: str | None, backend: str) -> tuple[bool, bool]:
    """Whether the batch of `item` on `backend` and `renderer` (None: the scene's) holds
    (world cameras' poses and lights, cameras' fields of view) per world."""
    if backend not in PER_ENV_BACKENDS:
        return False, False
    render = item.base.render
    return True, (renderer or render.renderer) == "opengl" or render.raytrace.shading == "opengl"


def scene_key(item: PlanItem, renderer: str | None, backend: str = "mujoco") -> str:
    """What must be equal for two cells of a task to share a batch: their scene, except
    the background's splats (per world on the warp rig `renderer`, or not drawn) and the
    camera and light rows held per world (`views_per_world`)."""
    data = item.scene.model_dump(mode="json", by_alias=True)
    background = data.pop("background", None)
    if (renderer or item.scene.render.renderer) == "warp":
        data["background"] = background and {"fallback": background.get("fallback")}
    views, fovy = views_per_world(item, renderer, backend)
    if views:
        data = view_key(data, fovy)
    return json.dumps(data, sort_keys=True)


@dataclass
class CellBatches:
    """The batches of a run's (task, cell) items; empty when the run batches no cells
    (`off` says why, None when it was not asked to)."""

    batches: list[list[PlanItem]] = field(default_factory=list)
    member: dict[tuple[str, str], int] = field(default_factory=dict)
    # (per world, scene) factor names, and why camera and light factors run apart
    factors: tuple[list[str], list[str], str | None] = ([], [], None)
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
        out = cls(factors=_factor_names(plan, cfg.render, cfg.backend))
        keys: dict[tuple[str, str], int] = {}
        for item in plan.items():
            key = scene_key(item, cfg.render, cfg.backend)
            index = keys.setdefault((item.name, key), len(out.batches))
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
        runtime, scene, apart = self.factors
        return {
            "batched": True,
            "per_world": PER_WORLD.format(names=", ".join(runtime) or "none"),
            "separate": REBUILT.format(names=scene) + (f" ({apart})" if apart else "")
            if scene
            else None,
            "batches": [
                {"task": g[0].name, "cells": [i.cell.id for i in g], "worlds": "shared"}
                if len(g) > 1
                else {"task": g[0].name, "cells": [g[0].cell.id], "worlds": "alone"}
                for g in self.batches
            ],
        }


def _factor_names(
    plan: Plan, renderer: str | None, backend: str
) -> tuple[list[str], list[str], str | None]:
    """The grid's factors applied per world (a background's and a camera or light's with
    what that means on `renderer`), its scene factors, and why camera or light factors
    are among the latter (None: they are not)."""
    per_world = [f.name for f in plan.grid.factors if f.axis in RUNTIME_AXES]
    for f in plan.grid.factors:
        if f.axis == "background":
            how = BACKGROUND.get(renderer or "", "by each scene's renderer: " + "; ".join(
                f"{k}: {v}" for k, v in BACKGROUND.items()))  # fmt: skip
            per_world.append(f"{f.name} ({how})")
    items = list(itertools.islice(plan.items(), 1))
    views, fovy = views_per_world(items[0], renderer, backend) if items else (False, False)
    drawn = renderer or (items[0].base.render.renderer if items else "opengl")
    held = {f.name for f in plan.grid.factors
            if f.axis in VIEW_AXES and (fovy if f.axis in FOV_AXES else views)}  # fmt: skip
    for f in plan.grid.factors:
        if f.name in held:
            per_world.append(f"{f.name} ({(FOV if f.axis in FOV_AXES else VIEWS)[drawn]})")
    axes = (*RUNTIME_AXES.names(), "background")
    scene = [f.name for f in plan.grid.factors if f.axis not in axes and f.name not in held]
    apart = [f for f in plan.grid.factors if f.axis in VIEW_AXES and f.name not in held]
    why = VIEWS_APART["fov" if views else "backend"].format(backend=backend) if apart else None
    return per_world, scene, why


def _part(item: PlanItem, results: dict[tuple[str, str], dict[int, bool]]) -> CellPart:
    """The episodes of `item` not recorded yet, as its share of a batch."""
    held = results.get((item.name, item.cell.id), {})
    todo = tuple(k for k in item.episodes if k not in held)
    return CellPart(item.cell.id, item.cell.values, item.noise, todo, item.scene.background,
                    view_data(item.scene))  # fmt: skip


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
