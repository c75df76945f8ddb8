"""A whole benchmark added from outside the package: the toy benchmark of tests/toy_bench/
(its own prefix `toy:`, fixture kind `toy_pad`, predicate kind `toy_near`) goes through
`metasim scene validate`, `metasim eval`, `metasim report` (with a replayed video) and
`metasim collect`, with no edit to metasim/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.scene.sources import load_task_scene
from tests.toy_bench.kinds import ToyNear, ToyPadSpec

pytestmark = pytest.mark.slow

RUN = ["policy=scripted", "episodes=2", "num_envs=2"]


def test_the_toy_benchmark_through_every_verb(
    toy_source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scene = load_task_scene(f"{toy_source}far/0")
    assert any(isinstance(f, ToyPadSpec) for f in scene.fixtures)
    assert any(isinstance(p, ToyNear) for p in scene.task.success.all)  # type: ignore[union-attr]

    assert main(["scene", "validate", f"{toy_source}lift/0", f"{toy_source}far/0"]) == 0
    assert capsys.readouterr().out.count("ok: toy:") == 2

    # eval: the expert lifts the cube in both tasks; only over the pad is it a success,
    # so toy_near is evaluated (a far pad fails every episode)
    run = tmp_path / "run"
    tasks = f"suite.tasks=[{toy_source}lift/0,{toy_source}far/0]"
    assert main(["eval", "--quiet", tasks, *RUN, f"out={run}"]) == 0
    summary = json.loads((run / "summary.json").read_text())["tasks"]
    assert summary["toy_lift_0"]["successes"] == 2 and summary["toy_far_0"]["successes"] == 0
    assert summary["toy_far_0"]["mean_progress"] > 0  # it grasped and lifted: subgoals met

    # report: replays one success and one failure through the task source
    html_path = tmp_path / "report.html"
    assert main(["report", str(run), "--videos", "1", "--out", str(html_path)]) == 0
    html = html_path.read_text()
    assert html.count("data:video/mp4;base64,") == 2 and "replay failed" not in html
    assert "toy_lift_0" in html and "toy_far_0" in html

    # collect: a LeRobot dataset of the benchmark's suite
    pytest.importorskip("lerobot")
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    out = tmp_path / "ds"
    args = ["collect", "--quiet", "suite=toy_suite", "image_size=16", *RUN, "episodes=1"]
    assert main([*args, f"out={out}"]) == 0
    assert LeRobotDataset("metasim/toy_suite", root=out).meta.total_episodes == 2
    lines = (out / "meta" / "metasim_episodes.jsonl").read_text().splitlines()
    assert [json.loads(x)["task"] for x in lines] == ["toy_lift_0", "toy_lift_1"]
