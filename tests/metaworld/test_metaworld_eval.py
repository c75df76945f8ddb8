"""`policy=metaworld_expert` through metasim's normal eval loop next to the package's own
scripted policies in the package's own loop, on the same variations
(`metasim.metaworld.xcheck`), and the variation of an episode independent of its env slot
and of `num_envs`.

CI: three MT10 tasks whose dynamics agree with the package's to the step (reach, push,
button-press-topdown), two episodes each: the same outcome and first-success step per
episode. Slow: all of MT10, three episodes each, every task's difference within its paired
interval. The full MT50 x 10 table is docs/log/metaworld.md's ("metasim vs the package: MT50").
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.errors import MetasimInputError
from metasim.metaworld import xcheck
from metasim.metaworld.reference.simulator import MetaWorldRef
from metasim.scene.sources import compile_task

STEP_EXACT = ["reach-v3", "push-v3", "button-press-topdown-v3"]


def _mt10(names: list[str]) -> list[xcheck.TaskRef]:
    return xcheck.select(xcheck.suite_tasks("metaworld_mt10"), names)


def _metasim(tasks: list[xcheck.TaskRef], episodes: int, out: Path, num_envs: int) -> dict:
    _, outcomes = xcheck.run_outcomes(xcheck.run_metasim(tasks, episodes, out, num_envs))
    return outcomes


@pytest.mark.reference
def test_the_expert_matches_the_package_to_the_step(tmp_path: Path, mw_ref: MetaWorldRef) -> None:
    tasks = _mt10(STEP_EXACT)
    ours = _metasim(tasks, 2, tmp_path / "run", num_envs=2)
    theirs = xcheck.package_table(mw_ref, tasks, 2)
    rows = xcheck.compare(tasks, ours, theirs, 2)
    for row in rows:
        assert row.metasim == row.package, row.task.task  # success and first-success step
        assert all(o.success for o in row.package)
        assert row.within and row.same_steps == 2
    text = xcheck.markdown(rows)
    assert "| reach-v3 | 2/2 | 2/2 | +0.0 |" in text
    assert "difference within the paired 95% interval (it contains 0) in 3/3 tasks" in text
    _the_same_through_the_cli(tmp_path / "run", tmp_path / "package.json")


def _the_same_through_the_cli(run: Path, package: Path) -> None:
    """`metasim check xcheck --benchmark metaworld` on that run (the package's side run
    and written to `package`), then again reading it back: the same rows; the removed old
    spelling `metaworld-compare` is refused as an unknown verb (exit 2, one line)."""
    import contextlib
    import io

    from metasim.cli.main import main

    args = ["--run", str(run), "--tasks", *STEP_EXACT, "--episodes", "2", "--json"]
    outs = []
    for argv in (["check", "xcheck", "--benchmark", "metaworld"],) * 2:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            assert main([*argv, *args, "--package", str(package)]) == 0, err.getvalue()
        outs.append((json.loads(out.getvalue()), err.getvalue()))
    (first, first_err), (again, again_err) = outs
    assert first == again and package.is_file()
    assert "note:" not in first_err + again_err
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["metaworld-compare", *args, "--package", str(package)]) == 2
    assert err.getvalue().count("\n") == 1
    assert "invalid choice: 'metaworld-compare'" in err.getvalue()


@pytest.mark.reference
def test_an_episode_starts_from_its_variation_in_any_slot() -> None:
    """Episode k starts from variation k whichever slot of however many envs runs it."""
    compiled = compile_task("metaworld:MT10/push-v3")

    def start(num_envs: int, episodes: list[int]) -> np.ndarray:
        env = MetasimVectorEnv(compiled, num_envs=num_envs, action_space="mocap_delta")
        try:
            ids = np.arange(num_envs)
            obs, _ = env.reset(options={"env_ids": ids, "seeds": episodes, "episodes": episodes})
            priv = obs["privileged"]  # the frame the expert reads and the goal (a site row)
            parts = [env.handler.get_state().qpos, priv["metaworld_frame"], priv["metaworld_goal"]]
            return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts], axis=1)
        finally:
            env.close()

    alone = np.concatenate([start(1, [k]) for k in range(4)])
    assert not np.allclose(alone[0], alone[1])  # the variations do differ
    shuffled = start(4, [2, 0, 3, 1])
    np.testing.assert_array_equal(shuffled, alone[[2, 0, 3, 1]])


@pytest.mark.reference
def test_outcomes_do_not_depend_on_num_envs(tmp_path: Path) -> None:
    """The same episodes of one task with 1 and with 4 envs: identical outcomes and steps."""
    tasks = _mt10(["reach-v3"])
    one = _metasim(tasks, 4, tmp_path / "one", num_envs=1)
    four = _metasim(tasks, 4, tmp_path / "four", num_envs=4)
    assert one == four
    assert len(one[tasks[0].scene]) == 4


def test_bad_input_is_named() -> None:
    with pytest.raises(MetasimInputError, match="--suite"):
        xcheck.suite_tasks("metaworld_mt11")
    with pytest.raises(MetasimInputError, match="--tasks"):
        xcheck.select(xcheck.suite_tasks("metaworld_mt10"), ["hammer-v3"])
    with pytest.raises(SystemExit) as exc:  # argparse refuses the number: exit 2, no traceback
        xcheck.main(["--episodes", "0"])
    assert exc.value.code == 2


@pytest.mark.reference
@pytest.mark.slow
def test_mt10_agrees_with_the_package_within_the_interval(
    tmp_path: Path, mw_ref: MetaWorldRef
) -> None:
    tasks = xcheck.suite_tasks("metaworld_mt10")
    ours = _metasim(tasks, 3, tmp_path / "run", num_envs=3)
    rows = xcheck.compare(tasks, ours, xcheck.package_table(mw_ref, tasks, 3), 3)
    assert [r.task.task for r in rows if not r.within] == []
    for row in rows:
        if row.task.task in STEP_EXACT:
            assert row.metasim == row.package


def test_package_file_never_replaces_a_users_file(capsys, tmp_path: Path) -> None:
    """`--package` naming a file this command did not write (a user's settings, a JSON
    list, a system file, a folder) is refused before any work, and left as it was
    (issue #33 items 1 and 5)."""
    from tests.cli_refusal import refused

    settings = tmp_path / "settings.json"
    settings.write_text('{"lr": 0.001}\n')
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]\n")
    run = [
        "check",
        "--benchmark",
        "metaworld",
        "xcheck",
        "--run",
        str(tmp_path / "no_run"),
        "--episodes",
        "1",
    ]
    for target in (settings, listed, Path("/etc/passwd"), tmp_path):
        err = refused(capsys, [*run, "--tasks", "reach-v3", "--package", str(target)])
        assert "--package" in err and str(target) in err, err
    assert settings.read_text() == '{"lr": 0.001}\n' and listed.read_text() == "[1, 2]\n"


def test_package_file_is_read_back_only_for_its_key(tmp_path: Path) -> None:
    """A file this command wrote is read for the same tasks, episodes and seed, else rerun."""
    tasks = _mt10(["reach-v3"])
    key = {"tasks": [t.ref for t in tasks], "episodes": 2, "seed": 0}
    path = tmp_path / "pkg.json"
    rows = {"reach-v3": [[True, 40], [False, 0]]}
    path.write_text(xcheck.stamp_json(xcheck.PACKAGE_STAMP, {"key": key, "rows": rows}))
    assert xcheck.check_out_file(path, "--package", xcheck.PACKAGE_FILE) == path
    assert xcheck.read_package_file(path, key) == {
        "reach-v3": [xcheck.Outcome(True, 40), xcheck.Outcome(False, 0)]
    }
    assert xcheck.read_package_file(path, {**key, "seed": 1}) is None
    assert xcheck.read_package_file(path, {**key, "episodes": 3}) is None  # too few rows
    # a file stamped under the verb's old name (`metaworld-compare`) loads and is replaceable
    path.write_text(xcheck.stamp_json(xcheck.OLD_PACKAGE_STAMP, {"key": key, "rows": rows}))
    assert xcheck.check_out_file(path, "--package", xcheck.PACKAGE_FILE) == path
    assert xcheck.read_package_file(path, key) is not None
    assert "metaworld-compare" not in xcheck.PACKAGE_STAMP


ML_HIDDEN = ["metaworld:ML1-test/hand-insert-v3", "metaworld:ML1-test/box-close-v3"]


@pytest.mark.reference
def test_ml_tasks_hide_the_goal_as_the_package_does(mw_ref: MetaWorldRef) -> None:
    """An ML benchmark's task (ML1 test: the package builds it fastest) hides the goal
    exactly as the package's `partially_observable` env: `metaworld_goal` and the 39-D
    observation read zeros there at every step, and the reset observation is the
    package's bit for bit; an MT task shows it (issue #33 item 2)."""
    from metasim.metaworld.expert import Observer
    from metasim.metaworld.terms import world_of

    actions = np.clip(np.cumsum(np.random.default_rng(0).normal(0, 0.3, (8, 4)), 0), -1, 1)
    for ref, hidden in ((ML_HIDDEN[0], True), ("metaworld:MT1/hand-insert-v3", False)):
        compiled = compile_task(ref)
        world = world_of(compiled.scene)
        assert world is not None and world.partially_observable is hidden
        env = MetasimVectorEnv(compiled, num_envs=1, action_space="mocap_delta")
        try:
            obs, _ = env.reset(options={"env_ids": np.arange(1), "seeds": [0], "episodes": [0]})
            observer = Observer(world.task, 1, world.partially_observable)
            rows, goals = (
                [observer.observe(obs["privileged"])],
                [obs["privileged"]["metaworld_goal"]],
            )
            for a in actions:
                obs, *_ = env.step(a[None])
                rows.append(observer.observe(obs["privileged"]))
                goals.append(obs["privileged"]["metaworld_goal"])
        finally:
            env.close()
        ours = np.concatenate(rows)
        bench, _, rest = ref.removeprefix("metaworld:").partition("/")
        name, split = bench.partition("-")[0], bench.partition("-")[2] or "train"
        theirs = mw_ref.rollout(rest, actions, benchmark=name, split=split, variation=0)["obs"]
        assert np.all((theirs[:, 36:] == 0) == hidden)  # what the package shows
        np.testing.assert_array_equal(ours[:, 36:], theirs[:, 36:])
        assert np.all((np.concatenate(goals) == 0) == hidden)
        np.testing.assert_allclose(ours[0], theirs[0], atol=1e-9, rtol=0)


@pytest.mark.reference
def test_ml_tasks_run_both_sides_alike(tmp_path: Path, mw_ref: MetaWorldRef) -> None:
    """The Meta-World xcheck of ML tasks: the expert sees the goal hidden on both sides, so
    the tasks the package's expert fails without the goal fail in metasim too (it
    succeeded in every episode when metasim showed it the goal)."""
    tasks = [xcheck.task_ref(r) for r in ML_HIDDEN]
    ours = _metasim(tasks, 1, tmp_path / "run", num_envs=1)
    rows = xcheck.compare(tasks, ours, xcheck.package_table(mw_ref, tasks, 1), 1)
    for row in rows:
        assert row.metasim == row.package, row.task.task
        assert not any(o.success for o in row.package)  # the package's expert needs the goal


# MT10 x 10 on warp (`metasim check xcheck --benchmark metaworld --backend warp`,
# docs/log/backends.md): 100/100 outcomes equal the package's, 77 of the 99 successes
# at the same step.
WARP_TASKS = ["reach-v3", "drawer-open-v3"]


@pytest.mark.reference
@pytest.mark.slow
@pytest.mark.parametrize(
    "names",
    [
        pytest.param(WARP_TASKS, id="sample"),
        pytest.param(None, marks=pytest.mark.sweep, id="mt10"),
    ],
)
def test_warp_outcomes_agree_with_the_package(
    tmp_path: Path, mw_ref: MetaWorldRef, names: list[str] | None
) -> None:
    """The expert on the warp backend (MuJoCo Warp on the CPU device; the weld rows
    without the J̇v term, as the package's MuJoCo 3.3.0) reaches the package's outcome in
    every episode, and the run's manifest states the backend's fidelity. The sample: reach
    and drawer-open, 2 episodes; the sweep lane: all of MT10."""
    if names is None:
        names = [t.task for t in xcheck.suite_tasks("metaworld_mt10")]
    tasks = _mt10(sorted(set(names)))
    run = xcheck.run_metasim(tasks, 2, tmp_path / "run", num_envs=2, backend="warp")
    _, ours = xcheck.run_outcomes(run)
    rows = xcheck.compare(tasks, ours, xcheck.package_table(mw_ref, tasks, 2), 2)
    assert [(r.task.task, r.metasim, r.package) for r in rows if r.metasim != r.package] == []
    assert sum(r.errors for r in rows) == 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["config"]["backend"] == "warp"
    assert "equality_jdotv: false" in manifest["backend_fidelity"]


# MuJoCo >= 3.12's box-box routine (native's, which the warp backend uses too) solves
# shelf-place 6/10 where the package on 3.3.0 solves 10/10; MuJoCo Warp's GJK/EPA box-box
# gives 10/10 (docs/log/backends.md, "Meta-World MT10 and MT50 on warp").
BOX_BOX = {"shelf-place-v3"}


@pytest.mark.reference
@pytest.mark.sweep  # MT50 x 10 on warp: ~50 min
def test_warp_mt50_within_the_package_interval(tmp_path: Path, mw_ref: MetaWorldRef) -> None:
    """MT50 x 10 with the expert on warp: every task's success within its paired interval
    of the package's, but the box-box task, where warp gives native metasim's outcomes
    (measured: 489/500 episodes agree with the package, 49/50 tasks within)."""
    tasks = xcheck.suite_tasks("metaworld_mt50")
    run = xcheck.run_metasim(tasks, 10, tmp_path / "warp", num_envs=10, backend="warp")
    _, ours = xcheck.run_outcomes(run)
    rows = xcheck.compare(tasks, ours, xcheck.package_table(mw_ref, tasks, 10), 10)
    assert sum(r.errors for r in rows) == 0
    outside = sorted(r.task.task for r in rows if not r.within)
    assert set(outside) <= BOX_BOX, outside
    known = [t for t in tasks if t.task in BOX_BOX]
    _, native = xcheck.run_outcomes(xcheck.run_metasim(known, 10, tmp_path / "native", 10))
    native_rows = xcheck.compare(known, native, xcheck.package_table(mw_ref, known, 10), 10)
    solved = {r.task.task: sum(o.success for o in r.metasim) for r in native_rows}
    for row in (r for r in rows if r.task.task in BOX_BOX):
        assert sum(o.success for o in row.metasim) == solved[row.task.task], row.task.task
