"""The task `metasim recon` writes targets an object the gripper can take: on a scan
whose largest object is a 12 cm wide box (wider than the Panda's 8 cm opening), the
"pick up" task names a smaller, graspable object, report.json says why the box was
passed over, and the scripted expert lifts the chosen object in the scene recon wrote."""

from __future__ import annotations

import json

import numpy as np
import pytest

from metasim.cli.main import main
from metasim.recon import ReconOptions, reconstruct
from metasim.recon.objects import MeshData, ReconObject
from metasim.recon.synthetic import (
    TABLE_HALF,
    TruePrimitive,
    TruthScene,
    render_scan,
    write_rgbd_capture,
)
from metasim.recon.target import MAX_WIDTH, choose_target
from metasim.scene.loader import load_yaml

WIDE = TruthScene(
    TABLE_HALF,
    (
        TruePrimitive("crate", "box", (0.06, 0.08, 0.04), (-0.06, -0.1, 0.04), yaw=0.3),
        TruePrimitive("block", "box", (0.02, 0.03, 0.035), (0.1, 0.08, 0.035), yaw=-0.4),
        TruePrimitive("ball", "sphere", (0.025,), (-0.08, 0.13, 0.025)),
    ),
)


def _box_object(name: str, half: tuple[float, float, float]) -> ReconObject:
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    verts = corners * np.asarray(half)
    mesh = MeshData(verts, np.zeros((0, 3), dtype=int), np.zeros((8, 3)))
    return ReconObject(name, np.array([0.0, 0.0, half[2]]), 0.0, mesh, np.zeros(3), 100)


def test_choice_skips_what_the_gripper_cannot_take():
    objects = [
        _box_object("wide", (0.06, 0.08, 0.04)),  # 12 cm across its narrower side
        _box_object("flat", (0.02, 0.02, 0.003)),  # 6 mm high
        _box_object("tower", (0.02, 0.02, 0.25)),  # 50 cm tall
        _box_object("mug", (0.03, 0.04, 0.05)),
    ]
    choice = choose_target(objects)
    assert choice.name == "mug" and choice.graspable
    why = {o["name"]: o["why"] for o in choice.report()["objects"]}
    assert "wider than the gripper's usable opening" in why["wide"]
    assert "under" in why["flat"] and "over" in why["tower"]
    # an object just inside the usable opening is taken; none at all keeps the largest
    assert choose_target([_box_object("edge", (MAX_WIDTH / 2 - 1e-3, 0.05, 0.04))]).graspable
    fallback = choose_target(objects[:1])
    assert fallback.name == "wide" and not fallback.graspable


@pytest.fixture(scope="module")
def wide_scan(tmp_path_factory):
    work = tmp_path_factory.mktemp("wide")
    rgb, depth, poses, intr = render_scan(work, n=24, scene=WIDE)
    write_rgbd_capture(work / "capture", rgb, depth, poses, intr)
    out = work / "scene_out"
    return out, reconstruct(work / "capture", out, ReconOptions(quiet=True))


@pytest.mark.slow
def test_recon_task_targets_a_graspable_object(wide_scan, tmp_path):
    out, report = wide_scan
    found = {o["name"]: o for o in report["scene"]["objects"]}
    assert len(found) == 3
    largest = report["scene"]["objects"][0]["name"]  # the crate: largest first
    assert min(found[largest]["size_m"][:2]) > 0.1
    task = report["task"]
    assert task["graspable"] and task["object"] != largest
    verdicts = {o["name"]: o for o in task["objects"]}
    assert not verdicts[largest]["graspable"]
    assert "wider than the gripper's usable opening" in verdicts[largest]["why"]
    assert verdicts[task["object"]]["width_m"] <= MAX_WIDTH
    scene = load_yaml(out / "scene.yaml")
    assert scene["task"]["expert"]["object"] == task["object"]
    assert scene["task"]["success"]["lifted"]["object"] == task["object"]
    run = tmp_path / "run"
    args = ["eval", "--quiet", f"suite.tasks=[{out / 'scene.yaml'}]", "suite.name=recon"]
    args += ["policy=scripted", "episodes=4", "num_envs=4", f"out={run}"]
    assert main(args) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert next(iter(summary["tasks"].values()))["success_rate"] >= 0.75
