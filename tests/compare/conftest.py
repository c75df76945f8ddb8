"""Real short evaluations on the tabletop suite, shared by the compare tests.

Under a 3-cell action-noise grid (the expert fails some episodes), the same seed:
- `expert`: the scripted expert;
- `jitter10`, `jitter5`: the expert with deterministic action jitter of 0.01 and 0.005
  (tests/compare/jitter.py), the "expert with action noise";
and two faults: `seed4` (the expert with seed 4: unpaired) and `other_suite` (one task,
no grid: another suite and grid).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from metasim.evaluate.config import compose
from metasim.evaluate.runner import run_eval
from metasim.policies.base import POLICY_KINDS

GRID = """name: noisy
design: ofat
factors:
  - {name: action_noise, axis: action_noise, levels: [0.01, 0.015, 0.02]}
"""
TASKS = ["lift_cube", "stack_cube", "push_to_region"]


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from tests.compare import jitter

    root = tmp_path_factory.mktemp("compare")
    grid = root / "noisy.yaml"
    grid.write_text(GRID)
    common = ["episodes=6", "num_envs=3", f"suite.tasks=[{','.join(TASKS)}]"]
    common.append(f"perturbation={grid}")
    jittered = ["policy=scripted", f"policy.kind={jitter.KIND}"]
    specs = {
        "expert": ["seed=3"],
        "jitter10": ["seed=3", *jittered, "+policy.jitter=0.01"],
        "jitter5": ["seed=3", *jittered, "+policy.jitter=0.005"],
        "seed4": ["seed=4"],
    }
    out = {}
    for name, extra in specs.items():
        out[name] = root / name
        run_eval(compose([*common, *extra, f"out={out[name]}"]))
    out["other_suite"] = root / "other_suite"
    run_eval(
        compose(
            [
                "episodes=2",
                "num_envs=2",
                "seed=3",
                "suite.tasks=[lift_cube]",
                f"out={out['other_suite']}",
            ]
        )
    )
    return out


@pytest.fixture(scope="session", autouse=True)
def _unregister_jitter() -> object:
    yield None
    if "jittered_scripted" in POLICY_KINDS.names():
        POLICY_KINDS.unregister("jittered_scripted")
