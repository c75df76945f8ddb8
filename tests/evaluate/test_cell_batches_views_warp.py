"""A camera x light x field-of-view grid (8 cells) on the warp rig as worlds of one batch
(`batch_cells=true`) gives the episode records and the images of its cells run one by
one (Warp's CPU device): a LIBERO task on native physics, lift_cube on warp physics.

The policy is a `policy=python` probe that acts on what it sees: each env's action
moves with the mean brightness of its first image, so an image that differs in
one pixel changes that env's trajectory; it logs a hash of every image it is sent and
the robot state, and ends each episode after a few requests (an error the run records).
All episodes start together (one episode per cell, eight worlds), so the batched run's
env i runs cell i and meets every request at the same step as cell i run alone."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

from metasim.evaluate.config import EvalConfig
from metasim.evaluate.records import EpisodeRecord
from metasim.evaluate.runner import run_eval
from tests.probes import Capped

pytestmark = pytest.mark.slow

LOG = "METASIM_TEST_VIEWS_LOG"
CALLS = 3  # requests per episode before the probe stops it


def _view(camera: str, size: int) -> dict[str, Any]:
    return {"camera": camera, "render": [size, size], "size": [size, size]}


TASKS = {  # the probe's images, state and actions per task
    "libero:libero_goal/3": (
        {"observation/image": _view("agentview", 48),
         "observation/wrist_image": _view("robot0_eye_in_hand", 32)},
        ["ee_pos", "hand_axis_angle", "gripper_qpos"],
        {"space": "osc_pose", "gripper": "pm1_open_neg"},
    ),
    "lift_cube": (
        {"observation/image": _view("front", 48), "observation/wrist_image": _view("wrist", 32)},
        ["ee_pos", "gripper_qpos"],
        {"space": "ee_delta", "rotation": "axis_angle", "gripper": "open1"},
    ),
}  # fmt: skip
GRID = (
    "name: views\ndesign: factorial\nfactors:\n"
    "  - {name: camera, axis: camera_shift, levels: [[0.0, 0.0, 0.0], [0.0, 0.15, 0.0]]}\n"
    "  - {name: light, axis: light_intensity, levels: [1.0, 0.35]}\n"
    "  - {name: fovy, axis: camera_fovy, levels: [0, 10]}\n"
)


class ViewProbe(Capped):
    """Acts on each env's image brightness, logs image hashes and states, stops after
    `CALLS` requests."""

    limit = CALLS

    def __init__(self, images: list[str]) -> None:
        super().__init__()
        self.images = images

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        self.count()
        imgs = [np.asarray(obs[k]) for k in self.images]
        b = imgs[0].shape[0]
        hashes = [[hashlib.sha1(img[i].tobytes()).hexdigest() for img in imgs] for i in range(b)]
        state = np.asarray(obs["observation/state"], dtype=np.float64)
        with open(os.environ[LOG], "a") as f:
            f.write(json.dumps({"hashes": hashes, "state": state.tolist()}) + "\n")
        light = imgs[0].reshape(b, -1).mean(axis=1) / 255.0 - 0.4  # (B,)
        t = np.arange(4)[None, :, None] + 4 * self.calls
        actions = 0.3 * np.sin(0.7 * t + np.arange(7)[None, None, :]) + light[:, None, None]
        return {"actions": np.broadcast_to(actions, (b, 4, 7)).copy()}


def _key(r: EpisodeRecord) -> tuple[Any, ...]:
    return (r.cell, r.episode, r.seed, r.success, r.progress, r.steps, r.error,
            json.dumps(r.factors, sort_keys=True))  # fmt: skip


def _run(
    tmp: Path, task: str, backend: str, batched: bool, monkeypatch: Any
) -> tuple[Any, list[Any]]:
    name = "batched" if batched else "alone"
    log = tmp / f"{name}.jsonl"
    monkeypatch.setenv(LOG, str(log))
    grid = tmp / "views.yaml"
    grid.write_text(GRID)
    images, state, actions = TASKS[task]
    policy = {
        "kind": "python",
        "target": "test_cell_batches_views_warp:ViewProbe",
        "args": {"images": list(images)},
        "observation": {"images": images, "state": {"observation/state": state}},
        "actions": actions,
        "execute": 4,
    }
    cfg = EvalConfig.model_validate(
        {"suite": {"name": "views", "tasks": [task]}, "policy": policy, "episodes": 1,
         "num_envs": 8, "backend": backend, "render": "warp", "perturbation": str(grid),
         "batch_cells": batched, "out": str(tmp / name)}
    )  # fmt: skip
    result = run_eval(cfg)
    return result, [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize(
    ("task", "backend"), [("libero:libero_goal/3", "mujoco"), ("lift_cube", "warp")]
)
def test_camera_light_grid_runs_as_one_batch(
    tmp_path: Path, monkeypatch: Any, task: str, backend: str
) -> None:
    alone, alone_log = _run(tmp_path, task, backend, False, monkeypatch)
    batched, batched_log = _run(tmp_path, task, backend, True, monkeypatch)
    assert len(alone.records) == 8 and all("probe done" in (r.error or "") for r in alone.records)
    assert sorted(map(_key, batched.records)) == sorted(map(_key, alone.records))
    record = batched.summary.model_dump()["cell_batches"]
    assert [len(b["cells"]) for b in record["batches"]] == [8] and record["separate"] is None
    assert "fovy (a precomputed ray set per field of view)" in record["per_world"]
    # request j of the batch holds cell i's images and state in row i, as cell i alone
    assert len(batched_log) == CALLS and len(alone_log) == 8 * CALLS
    for j, line in enumerate(batched_log):
        for i in range(8):
            own = alone_log[i * CALLS + j]
            assert line["hashes"][i] == own["hashes"][0], (j, i)
            assert line["state"][i] == own["state"][0], (j, i)
    first = [alone_log[i * CALLS]["hashes"][0][0] for i in range(8)]
    assert len(set(first)) == 8  # every cell's view differs
