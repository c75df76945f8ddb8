"""`metasim compare --plan` and `metasim eval --resume RUN_DIR episodes=N`: the planned
count is the smallest at which the scaled pooled interval excludes 0; a run extended to
more episodes equals a run made with that many from the start."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from metasim.cli.main import main
from metasim.compare import compare_runs
from metasim.compare.plan import _excludes_zero, episodes_needed
from metasim.evaluate.config import MAX_EPISODES


@pytest.mark.parametrize(
    "counts, per_cell, paired",
    [([10, 3, 1, 10], 2, True), ([40, 9, 5, 6], 5, True), ([7, 5, 3, 9], 3, False)],
)
def test_planned_count_is_the_smallest_that_excludes_zero(
    counts: list[int], per_cell: int, paired: bool
) -> None:
    need = episodes_needed(counts, per_cell, paired)
    assert need is not None and need > per_cell
    units = sum(counts) / per_cell
    assert _excludes_zero(counts, round(units * need), paired)
    assert not _excludes_zero(counts, round(units * (need - 1)), paired)


def test_no_difference_cannot_be_settled() -> None:
    assert episodes_needed([5, 0, 0, 5], 4, True) is None  # no discordant pairs at all
    # B − A = -1/4001 with half the pairs discordant: still inside the interval at the
    # eval's limit of MAX_EPISODES per task and cell (4e6 pairs, SE about 3.5e-4).
    assert episodes_needed([1000, 1001, 1000, 1000], 1000, True) is None
    assert not _excludes_zero([1000, 1001, 1000, 1000], 4 * MAX_EPISODES, True)


@pytest.mark.slow
def test_plan_of_real_runs_names_the_resume_commands(runs, capsys) -> None:
    out = compare_runs([runs["expert"], runs["jitter5"]], reps=100, with_plan=True)
    plan = out["plan"]
    assert plan["episodes_per_cell_now"] == 6
    if out["pooled"]["diff"] == 0:
        assert plan["episodes_per_cell"] is None and "no difference" in plan["why"]
    elif plan["episodes_per_cell"] is not None and not plan["already_settled"]:
        assert plan["commands"] == [
            f"metasim eval --resume {runs[n]} episodes={plan['episodes_per_cell']}"
            for n in ("expert", "jitter5")
        ]
    assert main(["compare", str(runs["expert"]), str(runs["jitter10"]), "--plan"]) == 0
    assert "Plan:" in capsys.readouterr().out


def _rows(run: Path) -> list[dict]:
    rows = pq.read_table(run / "episodes.parquet").drop(["wall_time_s"]).to_pylist()
    return sorted(rows, key=lambda r: (r["task"], r["cell"], r["episode"]))


@pytest.mark.slow
def test_extending_a_run_equals_running_it_long(tmp_path: Path, capsys) -> None:
    args = ["eval", "--quiet", "suite.tasks=[lift_cube]", "num_envs=2", "seed=2"]
    assert main([*args, "episodes=2", f"out={tmp_path / 'short'}"]) == 0
    assert main([*args, "episodes=4", f"out={tmp_path / 'long'}"]) == 0
    shutil.copytree(tmp_path / "short", tmp_path / "extended")
    assert main(["eval", "--quiet", "--resume", str(tmp_path / "extended"), "episodes=4"]) == 0
    assert _rows(tmp_path / "extended") == _rows(tmp_path / "long")
    manifest = json.loads((tmp_path / "extended" / "manifest.json").read_text())
    assert manifest["config"]["episodes"] == 4 and manifest["extended"] == [{"episodes": 2}]
    capsys.readouterr()
    for extra, fragment in (("episodes=3", "not lower it to 3"), ("seed=5", "only episodes=")):
        assert main(["eval", "--quiet", "--resume", str(tmp_path / "extended"), extra]) == 2
        err = capsys.readouterr().err
        assert fragment in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
