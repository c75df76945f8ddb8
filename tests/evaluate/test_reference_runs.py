"""`metasim eval` gives the same results as the stored reference runs.

tests/data/reference_runs/ holds `summary.json` and `episodes.parquet` of two runs made
before the typed-rollout refactor (issue 11), with the default suite and policy:

- base: `metasim eval episodes=10 out=...`
- pert: `metasim eval perturbation=standard episodes=2 suite.tasks=[lift_cube,open_drawer]`

Re-made since: pert, when success came to read the poses of the last substep's state
(issue 20, `Handler.kinematics(at="step")`): one lift_cube episode (cell ab942ae03d, episode 1)
succeeds a control step later (43 steps, was 42); nothing else changed (base is as it was).
Both re-made when the scripted pick chose its grasp from the object's geometry and gained
a centring phase over the object (issue 24): every pick takes 11-33 more control steps
(lift_cube's mean 42.2 -> 57.2), push_to_region's sides -30..+12; success is unchanged in
base (90/90) and in pert 42 -> 45 of 52 (three perturbed lift_cube episodes now lift; one
of the failures drops from progress 0.5 to 0).
Both summaries' configs gained `render: null` and `render_spp: null` when the camera
renderer became a config field (issue 30); the runs have no cameras, nothing else changed.
Both gained `nconmax: null` and `njmax: null` when warp's contact capacity became a config
field (issue 47); the runs use the native backend, nothing else changed.

Volatile fields, dropped from the stored copies and from the fresh runs before comparing:
- summary.json: `wall_time_s` (a timing), `run_dir` and `config.out` (where the run was
  written), `versions` (Python/package versions, platform and git commit of the checkout).
- episodes.parquet: `wall_time_s` (a timing).

Everything else (per-task and per-cell summaries, aggregates and their bootstrap
intervals, sensitivity tables, the config, every episode's seed, success, progress,
steps, error, cell and factors) must be equal; floats to 1e-9 relative.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from metasim.cli.main import main

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[1] / "data" / "reference_runs"
RUNS = {
    "base": ["episodes=10"],
    "pert": ["perturbation=standard", "episodes=2", "suite.tasks=[lift_cube,open_drawer]"],
}
VOLATILE_SUMMARY = ("wall_time_s", "run_dir", "versions")
VOLATILE_EPISODE = ("wall_time_s",)


def stable_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without the fields that change from run to run."""
    out = {k: v for k, v in summary.items() if k not in VOLATILE_SUMMARY}
    out["config"] = {k: v for k, v in out["config"].items() if k != "out"}
    return out


def assert_same(a: Any, b: Any, path: str = "") -> None:
    """Structural equality; floats to 1e-9 relative, NaN equal to NaN."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), f"{path}: keys {a.keys()} != {b}"
        for k in a:
            assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: {a} != {b}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and not isinstance(b, bool) and isinstance(b, int | float):
        if math.isnan(a):
            assert math.isnan(b), f"{path}: {a} != {b}"
        else:
            assert b == pytest.approx(a, rel=1e-9, abs=1e-12), f"{path}: {a} != {b}"
    else:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"


@pytest.mark.parametrize("name", sorted(RUNS))
def test_eval_matches_the_stored_reference_run(tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    assert main(["eval", "--quiet", *RUNS[name], f"out={out}"]) == 0

    want = json.loads((DATA / f"{name}_summary.json").read_text())
    got = stable_summary(json.loads((out / "summary.json").read_text()))
    assert_same(want, got, "summary")

    ref = pq.read_table(DATA / f"{name}_episodes.parquet")
    fresh = pq.read_table(out / "episodes.parquet").drop(list(VOLATILE_EPISODE))
    assert fresh.schema.names == ref.schema.names
    assert [f.type for f in fresh.schema] == [f.type for f in ref.schema]
    assert_same(ref.to_pylist(), fresh.to_pylist(), "episodes")
