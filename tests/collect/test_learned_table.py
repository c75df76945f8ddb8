"""The table step of scripts/learned_policy_libero.sh (issue 44): three harnesses per task,
metasim native and warp paired episode by episode (`metasim compare`), LeRobot's
`lerobot-eval` folders named as LIBERO's (`task_group` the suite, `task_id` the task) and
summed over its seeds.

Two real short `metasim eval` runs of the same episodes stand in for (a) and (b) (the
scripted expert and the no-op policy on lift_cube: the table reads run folders whatever
their backend); LeRobot's side is `eval_info.json` as `lerobot-eval` writes it."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from metasim.evaluate.config import compose
from metasim.evaluate.runner import run_eval

pytestmark = pytest.mark.learned

ROOT = Path(__file__).resolve().parents[2]


def _table_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "learned_policy_table", ROOT / "scripts" / "learned_policy_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _eval_info(folder: Path, suite: str, task_id: int, successes: list[bool]) -> Path:
    """`eval_info.json` as LeRobot 0.4.4's lerobot-eval writes it for one LIBERO task."""
    folder.mkdir(parents=True)
    metrics = {"successes": successes, "sum_rewards": [float(s) for s in successes]}
    entry = {"task_group": suite, "task_id": task_id, "metrics": metrics}
    (folder / "eval_info.json").write_text(json.dumps({"per_task": [entry]}))
    return folder


def test_lerobot_folders_are_named_and_summed_as_libero_tasks(tmp_path: Path) -> None:
    table = _table_module()
    folders = [
        _eval_info(tmp_path / "a", "libero_90", 9, [True, False, True]),
        _eval_info(tmp_path / "b", "libero_90", 9, [False, False]),
        _eval_info(tmp_path / "c", "libero_90", 52, [True]),
    ]
    assert table.lerobot_counts(folders, "libero") == {
        "libero_90_9": (2, 5),
        "libero_90_52": (1, 1),
    }
    # Meta-World's folders keep the task group as the name (its task id is 0)
    assert table.lerobot_counts(folders, "metaworld") == {"libero_90": (3, 6)}


def test_three_harnesses_paired_native_minus_warp(tmp_path: Path) -> None:
    table = _table_module()
    runs = {}
    for name, policy in (("native", "scripted"), ("warp", "noop")):
        runs[name] = tmp_path / name
        run_eval(compose([f"policy={policy}", "suite.tasks=[lift_cube]", "episodes=4",
                          "num_envs=2", "seed=3", f"out={runs[name]}"]))  # fmt: skip
    lerobot = _eval_info(tmp_path / "lerobot", "lift", 0, [True, True, False, True])
    ours = table.metasim_counts(runs["native"])
    k_a, n = ours["lift_cube"]
    paired = table.paired_counts(runs["native"], runs["warp"])
    (row,) = table.table(ours, {"lift_cube": (3, 4)}, paired)
    k_b = row["warp"][0]
    assert n == 4 and row["warp"][1] == 4 and k_a > k_b  # the expert lifts, no-op does not
    d, lo, hi, p = row["paired"]
    assert d == pytest.approx((k_a - k_b) / n) and lo <= d <= hi and 0 < p <= 1
    assert row["within"] == (lo <= 0 <= hi and row["difference"][1] <= 0 <= row["difference"][2])
    text = table.markdown([row])
    assert "metasim warp" in text and f"{k_b}/4" in text and f"{d:+.2f}" in text
    assert table.lerobot_counts([lerobot]) == {"lift": (3, 4)}
