"""Camera and light cells as worlds of one batch: which cells of a grid share a batch on
each backend and renderer, what the run says of it, and the rows each world is given."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from metasim.envs.noise import RuntimeNoise
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.cell_batches import REBUILT, CellBatches
from metasim.evaluate.cells import CellPart, world_views
from metasim.evaluate.config import compose
from metasim.evaluate.plan import Plan
from metasim.perturb.views import view_data
from metasim.scene import compile_scene

GRID = (
    "name: views\ndesign: factorial\nfactors:\n"
    "  - {name: camera, axis: camera_shift, levels: [0.0, 0.08]}\n"
    "  - {name: light, axis: light_intensity, levels: [1.0, 0.4]}\n"
    "  - {name: fovy, axis: camera_fovy, levels: [0, 12]}\n"
    "  - {name: dx, axis: object_x, levels: [0.0, 0.03]}\n"
)


def _batches(
    tmp_path: Path, *extra: str, shading: str | None = None, backend: str | None = None
) -> tuple[Any, Plan]:
    grid = tmp_path / "views.yaml"
    grid.write_text(GRID)
    cfg = compose(["suite.tasks=[lift_cube]", f"perturbation={grid}", "batch_cells=true", *extra])
    if backend is not None:  # (not composed: the decision alone, no backend loaded)
        cfg = cfg.model_copy(update={"backend": backend})
    plan = Plan.of(cfg)
    if shading is not None:  # the scene's ray tracer with MuJoCo Warp's own shading
        tasks = []
        for task, scene in plan.tasks:
            raytrace = scene.render.raytrace.model_copy(update={"shading": shading})
            render = scene.render.model_copy(update={"raytrace": raytrace})
            tasks.append((task, scene.model_copy(update={"render": render})))
        plan = replace(plan, tasks=tasks)
    return CellBatches.of(cfg, plan), plan


def _values(batches: CellBatches, plan: Plan) -> list[set[tuple[Any, ...]]]:
    """Per batch, the (camera, light, fovy, dx) values of its cells."""
    cells = {c.id: c.values for c in plan.cells}
    return [
        {tuple(cells[i.cell.id][k] for k in ("camera", "light", "fovy", "dx")) for i in b}
        for b in batches.batches
    ]


@pytest.mark.parametrize(
    "extra", [("render=warp",), ("render=warp", "backend=warp"), ("render=opengl",)]
)
def test_camera_light_and_fovy_cells_share_a_batch(tmp_path: Path, extra: tuple[str]) -> None:
    batches, plan = _batches(tmp_path, *extra)
    values = _values(batches, plan)
    assert [len(v) for v in values] == [8, 8]  # the object shift alone rebuilds the model
    assert [{v[3] for v in b} for b in values] == [{0.0}, {0.03}]
    record = batches.record()
    assert record is not None and [len(b["cells"]) for b in record["batches"]] == [8, 8]
    assert record["separate"] == REBUILT.format(names=["dx"])
    how = "per world" if "render=warp" in extra else "in each env's model"
    assert f"camera (camera and light rows {how})" in record["per_world"]
    fov = "a precomputed ray set per field of view" if "render=warp" in extra else "camera rows"
    assert f"fovy ({fov}" in record["per_world"]


def test_fovy_cells_apart_with_mujoco_warps_own_shading(tmp_path: Path) -> None:
    batches, plan = _batches(tmp_path, "render=warp", shading="warp")
    values = _values(batches, plan)
    assert [len(v) for v in values] == [4, 4, 4, 4]
    assert all(len({(v[2], v[3]) for v in b}) == 1 for b in values)  # one fovy, one dx each
    record = batches.record()
    assert "fovy" in record["separate"] and "shading=warp" in record["separate"]
    assert "camera (" in record["per_world"] and "fovy (" not in record["per_world"]


def test_no_per_env_rows_on_mjx_every_view_cell_apart(tmp_path: Path) -> None:
    batches, _ = _batches(tmp_path, "render=opengl", backend="mjx")
    assert [len(b) for b in batches.batches] == [1] * 16
    assert "mjx backend takes no per-env camera or light rows" in batches.record()["separate"]


def test_each_world_gets_its_cells_rows(tmp_path: Path) -> None:
    """The rows the batch sets per env are each cell's own compiled model's (the native
    handler's per-env model values), and a batch of cells with the model's own cameras
    and lights sets none."""
    batches, plan = _batches(tmp_path, "render=opengl")
    items = batches.batches[0]
    compiled = [compile_scene(i.scene, source=i.task.path) for i in items]
    parts = tuple(
        CellPart(i.cell.id, i.cell.values, RuntimeNoise(), (0,), None, view_data(i.scene))
        for i in items
    )
    views = world_views(compiled[0], parts, 8)
    assert views is not None and {f for f, _ in views.edits} == {
        "cam_pos", "cam_quat", "cam_fovy", "light_diffuse"
    }  # fmt: skip
    assert world_views(compiled[0], parts[:1], 8) is None
    env = MetasimVectorEnv(compiled[0], num_envs=8)
    try:
        slots = np.arange(8)
        views.select(env.handler, slots, list(reversed(range(8))))
        for field, index in views.edits:
            got = env.handler.model_values(field, index)
            for w, c in enumerate(reversed(range(8))):
                np.testing.assert_array_equal(got[w], getattr(compiled[c].model, field)[index])
    finally:
        env.close()
