"""The learned-policy table (scripts/learned_policy_table.py) reads LeRobot's side from one
eval_info.json per task (the script runs each task on its own, so a cut-off run keeps the
tasks it finished) and sums a task's episodes over the folders it is given."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from learned_policy_table import lerobot_counts, main


def _info(folder: Path, task: str, successes: list[bool]) -> Path:
    """An eval_info.json as lerobot-eval 0.4.4 writes it (the fields the table reads)."""
    folder.mkdir(parents=True)
    entry = {"task_group": task, "task_id": 0, "metrics": {"successes": successes}}
    (folder / "eval_info.json").write_text(json.dumps({"per_task": [entry]}))
    return folder


def _summary(folder: Path, counts: dict[str, tuple[int, int]]) -> Path:
    folder.mkdir(parents=True)
    tasks = {f"metaworld_{t}": {"successes": k, "n": n} for t, (k, n) in counts.items()}
    (folder / "summary.json").write_text(json.dumps({"tasks": tasks}))
    return folder


def test_a_task_per_folder_and_a_task_split_over_folders_are_summed(tmp_path: Path) -> None:
    a = _info(tmp_path / "a", "drawer-close-v3", [True, False, True])
    b = _info(tmp_path / "b", "window-open-v3", [False, False])
    c = _info(tmp_path / "c", "drawer-close-v3", [True])
    assert lerobot_counts([a, b, c]) == {"drawer-close-v3": (3, 4), "window-open-v3": (0, 2)}


def test_the_table_exits_1_only_when_a_difference_interval_excludes_0(tmp_path: Path) -> None:
    theirs = [
        _info(tmp_path / "l1", "drawer-close-v3", [True] * 45 + [False] * 5),
        _info(tmp_path / "l2", "window-open-v3", [True] * 25 + [False] * 25),
    ]
    same = _summary(tmp_path / "m1", {"drawer-close-v3": (44, 50), "window-open-v3": (26, 50)})
    out = tmp_path / "table.json"
    args = ["--metasim", str(same), "--lerobot", *map(str, theirs), "--json", str(out)]
    assert main(args) == 0
    rows = {r["task"]: r for r in json.loads(out.read_text())}
    assert rows["drawer-close-v3"]["lerobot"][:2] == [45, 50]
    assert rows["window-open-v3"]["metasim"][:2] == [26, 50]
    apart = _summary(tmp_path / "m2", {"drawer-close-v3": (10, 50), "window-open-v3": (26, 50)})
    assert main(["--metasim", str(apart), "--lerobot", *map(str, theirs)]) == 1


def test_the_figure_plots_each_task_of_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from learned_policy_figures import main as figures

    theirs = _info(tmp_path / "l", "drawer-close-v3", [True, False])
    ours = _summary(tmp_path / "m", {"drawer-close-v3": (1, 2)})
    table = tmp_path / "table.json"
    assert main(["--metasim", str(ours), "--lerobot", str(theirs), "--json", str(table)]) == 0
    argv = ["learned_policy_figures.py", "--table", str(table), "--out", str(tmp_path / "f")]
    monkeypatch.setattr(sys, "argv", argv)
    figures()
    png = (tmp_path / "f" / "harnesses.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000
