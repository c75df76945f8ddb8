"""Cells of a grid that differ only in runtime factors run as worlds of one batch
(`batch_cells=true`) and give the same episode records as the cells run one by one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from metasim.envs.noise import RuntimeNoise, WorldNoise
from metasim.evaluate.config import compose
from metasim.evaluate.records import EpisodeRecord
from metasim.evaluate.runner import run_eval
from metasim.tasks.seeds import episode_seed
from tests.scene.splat_scenes import write_scene

GRID = (
    "name: g\ndesign: ofat\nfactors:\n"
    "  - {name: noise, axis: action_noise, levels: [0.0, 0.4]}\n"
    "  - {name: lat, axis: action_latency, levels: [0, 3]}\n"
    "  - {name: state, axis: state_noise, levels: [0.0, 0.02]}\n"
    "  - {name: dx, axis: object_x, levels: [0.0, 0.03]}\n"
)


def _key(r: EpisodeRecord) -> tuple[Any, ...]:
    """Everything of a record but its wall time."""
    return (r.task, r.cell, r.episode, r.seed, r.success, r.progress, r.steps, r.error,
            json.dumps(r.factors, sort_keys=True))  # fmt: skip


def _run(tmp_path: Path, name: str, *extra: str) -> tuple[list[EpisodeRecord], dict[str, Any]]:
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID)
    out = tmp_path / name
    args = ["suite.tasks=[lift_cube]", "episodes=2", "num_envs=3", f"perturbation={grid}"]
    result = run_eval(compose([*args, f"out={out}", *extra]))
    manifest = json.loads((out / "manifest.json").read_text())
    return result.records, {"manifest": manifest, "summary": result.summary.model_dump()}


def test_batched_cells_give_the_records_of_cells_run_one_by_one(tmp_path: Path) -> None:
    alone, files = _run(tmp_path, "alone")
    assert (
        "cell_batches" not in files["manifest"] and "batch_cells" not in files["manifest"]["config"]
    )
    batched, files = _run(tmp_path, "batched", "batch_cells=true")
    assert len(alone) == 5 * 2
    assert sorted(map(_key, batched)) == sorted(map(_key, alone))
    assert {r.seed for r in alone if r.episode == 1} == {episode_seed(0, 1)}
    # the runtime factors change the episodes (so a batch that ignored them would fail)
    by_cell: dict[str, list[tuple[int, float]]] = {}
    for r in alone:
        by_cell.setdefault(r.cell, []).append((r.steps, r.progress))
    assert len({tuple(v) for v in by_cell.values()}) > 2
    # what the run says: the nominal and runtime cells in one batch, the shifted one apart
    record = files["manifest"]["cell_batches"]
    assert files["summary"]["cell_batches"] == record
    assert record["batched"] and [len(b["cells"]) for b in record["batches"]] == [4, 1]
    assert "dx" in record["separate"] and "lat" in record["per_world"]
    dx = {r.cell: r.factors["dx"] for r in alone}
    assert [{dx[c] for c in b["cells"]} for b in record["batches"]] == [{0.0}, {0.03}]
    assert [b["worlds"] for b in record["batches"]] == ["shared", "alone"]


def test_adaptive_runs_say_the_cells_ran_one_by_one(tmp_path: Path) -> None:
    grid = tmp_path / "g.yaml"
    grid.write_text("name: g\nfactors:\n  - {name: lat, axis: action_latency, levels: [0, 2]}\n")
    out = tmp_path / "run"
    args = ["suite.tasks=[lift_cube]", "episodes=2", "adaptive=true", "adaptive_min=2"]
    run_eval(compose([*args, f"perturbation={grid}", "batch_cells=true", f"out={out}"]))
    record = json.loads((out / "manifest.json").read_text())["cell_batches"]
    assert record["batched"] is False and "adaptive" in record["why"]


def test_world_noise_draws_each_env_as_if_it_ran_alone() -> None:
    """Envs of one batch with different noises draw what each would draw alone."""
    noises = [
        RuntimeNoise(),
        RuntimeNoise(state_noise=0.1, image_noise=5.0),
        RuntimeNoise(image_blur=1.5, action_noise=0.2, action_latency=2),
        RuntimeNoise(state_noise=0.3, image_blur=0.7, image_noise=3.0, action_latency=1),
    ]
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, (2, 4, 8, 10, 3), dtype=np.uint8)  # (step, B, H, W, 3)
    state = rng.normal(size=(2, 4, 7))
    acts = rng.normal(size=(2, 4, 5))
    seeds = [11, 12, 13, 14]
    hold = np.arange(20.0).reshape(4, 5)
    batch = WorldNoise(noises, 4)
    batch.start(np.arange(4), seeds, lambda: hold)
    alone = [WorldNoise(n, 1) for n in noises]
    for i, w in enumerate(alone):
        w.start(np.array([0]), [seeds[i]], lambda i=i: hold[i : i + 1])
    for step in range(2):
        groups = {"policy": {"cam_rgb": images[step]}, "privileged": {"x": state[step]}}
        noisy = [("privileged", "x")]
        batch.observations(groups, noisy)
        applied = batch.actions(acts[step])
        for i, w in enumerate(alone):
            one = {"policy": {"cam_rgb": images[step][i : i + 1]},
                   "privileged": {"x": state[step][i : i + 1]}}  # fmt: skip
            if w.active:
                w.observations(one, noisy)
            np.testing.assert_array_equal(
                groups["policy"]["cam_rgb"][i], one["policy"]["cam_rgb"][0]
            )
            np.testing.assert_array_equal(groups["privileged"]["x"][i], one["privileged"]["x"][0])
            np.testing.assert_array_equal(applied[i], w.actions(acts[step][i : i + 1])[0])
    assert not np.array_equal(applied[2], acts[1][2])  # latency: the held action first
    # env 3 starts a new episode: it alone draws; the others keep what they were given
    before = {"privileged": {"x": state[1].copy()}, "policy": {}}
    batch.observations(before, [("privileged", "x")])  # (a step: everyone draws)
    groups = {"policy": {}, "privileged": {"x": state[0].copy()}}
    batch.start(np.array([3]), [99], lambda: hold)
    batch.observations(groups, [("privileged", "x")], fresh=np.array([3]))
    np.testing.assert_array_equal(groups["privileged"]["x"][:3], before["privileged"]["x"][:3])
    again = WorldNoise(noises[3], 1)
    again.start(np.array([0]), [99], lambda: hold[3:])
    one = {"policy": {}, "privileged": {"x": state[0][3:].copy()}}
    again.observations(one, [("privileged", "x")])
    np.testing.assert_array_equal(groups["privileged"]["x"][3], one["privileged"]["x"][0])


@pytest.mark.slow
def test_background_cells_share_a_batch_where_their_images_allow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenGL draws no splats: every background cell shares one batch. On the warp rig each
    world draws its cell's splat group: the cells with splats share one, those without
    (whose fallback is not hidden) run apart. Records as the cells run one by one."""
    monkeypatch.chdir(tmp_path)
    write_scene(tmp_path)  # green.ply, blue.ply
    grid = tmp_path / "rooms.yaml"
    grid.write_text(
        "name: rooms\ndesign: factorial\nfactors:\n"
        "  - {name: room, axis: background, levels: [none, green.ply, blue.ply]}\n"
        "  - {name: lat, axis: action_latency, levels: [0, 3]}\n"
    )
    args = ["suite.tasks=[lift_cube]", "episodes=2", "num_envs=4", f"perturbation={grid}"]

    def run(name: str, *extra: str) -> tuple[list[tuple[Any, ...]], Any]:
        result = run_eval(compose([*args, f"out={tmp_path / name}", *extra]))
        manifest = json.loads((tmp_path / name / "manifest.json").read_text())
        return sorted(map(_key, result.records)), manifest.get("cell_batches")

    alone, _ = run("alone")
    opengl, gl_record = run("gl", "batch_cells=true")
    warp, warp_record = run("warp", "batch_cells=true", "render=warp")
    assert opengl == alone and warp == alone
    assert [len(b["cells"]) for b in gl_record["batches"]] == [6]
    rooms = {r[1]: json.loads(r[-1])["room"] for r in alone}
    assert [{rooms[c] for c in b["cells"]} for b in warp_record["batches"]] == [
        {"none"},
        {"green.ply", "blue.ply"},
    ]
    assert "room (a splat group per world" in warp_record["per_world"]
    assert "draws the mesh fallback" in gl_record["per_world"]
