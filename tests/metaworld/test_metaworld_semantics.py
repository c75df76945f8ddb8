"""metasim's Meta-World success and observation against the package itself: the
reference venv (metaworld 3.1.1, MuJoCo 3.3.0) runs episodes (scripted policy, noisy
policy, random walk) and records every step's state, info["success"] and observation;
metasim compiles the same task XML in its own MuJoCo, with the Sawyer renamed `robot/...`
(the importer's naming contract), replays each state and must give the same success on
every state and the same observation to 1e-6 (`mw_replay.py`).

CI probes 11 tasks, the 7 whose success is not a plain distance among them (~30 s with
the venv built); the `slow` test probes all 50.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from mw_replay import compiled, load_probe, replay, run_probe

from metasim.metaworld.goal_space import GOAL_SPACE
from metasim.metaworld.objects import OBJECTS, xyzw_from_mat
from metasim.metaworld.obs import RESET_FRAME_STALE, PrevFrames, observation
from metasim.metaworld.state import MwState, UnknownElement
from metasim.metaworld.success import SUCCESS, success
from metasim.registry import UnknownName
from metasim.rotations import axis_angle_to_mat
from metasim.sim.base import Kinematics

FACTS = Path(__file__).parents[2] / "metasim/metaworld/facts.json"
CI_TASKS = [
    "assembly-v3",
    "basketball-v3",
    "disassemble-v3",
    "door-open-v3",
    "faucet-open-v3",
    "hammer-v3",
    "lever-pull-v3",
    "peg-insert-side-v3",
    "stick-pull-v3",
    "stick-push-v3",
    "sweep-into-v3",
]


@pytest.fixture(scope="module")
def ci_probe(mw_python: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("mw_probe")
    run_probe(mw_python, out, CI_TASKS, episodes=3, steps=130)
    return load_probe(out)


def check_episodes(metas: list[dict], arrays: dict, prefix: str = "robot/") -> dict[str, list]:
    """Replays every episode, with the reference's compiled body/site/geom frames and with
    metasim's own; asserts success agrees on every step in both and the observation to
    1e-6 in the first. Returns per task [steps, reference successes, steps agreeing
    (reference frames), steps agreeing (own frames), max |obs error| (reference frames),
    max |obs error| (own frames), max |reset observation error|]."""
    table: dict[str, list] = {}
    for meta in metas:
        r, own = replay(meta, arrays, prefix), replay(meta, arrays, prefix, whole=False)
        row = table.setdefault(r.task, [0, 0, 0, 0, 0.0, 0.0, 0.0])
        row[0] += len(r.success)
        row[1] += int(r.ref_success.sum())
        row[2] += int(np.sum(r.success == r.ref_success))
        row[3] += int(np.sum(own.success == own.ref_success))
        row[4] = max(row[4], float(np.abs(r.obs - r.ref_obs).max()))
        row[5] = max(row[5], float(np.abs(own.obs - own.ref_obs).max()))
        row[6] = max(row[6], r.reset_gap)
        for x in (r, own):
            bad = np.flatnonzero(x.success != x.ref_success)
            assert bad.size == 0, f"{x.task} episode {meta['episode']}: steps {bad + 1} disagree"
        np.testing.assert_allclose(r.obs, r.ref_obs, atol=1e-6, rtol=0, err_msg=r.task)
        assert np.array_equal(GOAL_SPACE[r.task], (meta["goal_low"], meta["goal_high"]))
        stale = r.task in RESET_FRAME_STALE
        assert (r.reset_gap > 1e-6) == stale, f"{r.task}: reset gap {r.reset_gap}"
    return table


def test_every_mt50_task_has_success_and_observation() -> None:
    tasks = set(json.loads(FACTS.read_text()))
    assert len(tasks) == 50
    assert {n for n, _ in SUCCESS.registered()} == tasks == set(OBJECTS) == set(GOAL_SPACE)


@pytest.mark.reference
def test_ci_tasks_match_the_reference(ci_probe) -> None:
    metas, arrays = ci_probe
    table = check_episodes(metas, arrays)
    assert set(table) == set(CI_TASKS)
    # Not vacuous: most probed tasks reach success in the reference, and every task has
    # states without it (the reset's neighbourhood, the random walk).
    assert sum(row[1] > 0 for row in table.values()) >= 9, table
    assert all(row[1] < row[0] for row in table.values()), table


@pytest.mark.reference
def test_raw_package_xml_reads_with_an_empty_prefix(ci_probe) -> None:
    metas, arrays = ci_probe
    table = check_episodes([m for m in metas if m["task"] == "stick-push-v3"], arrays, "")
    assert table["stick-push-v3"][1] > 0


@pytest.mark.reference
@pytest.mark.parametrize("task", ["door-open-v3", "faucet-open-v3"])
def test_prev_frames_follow_an_episode_as_the_package_does(ci_probe, task: str) -> None:
    """PrevFrames, one env stepped row by row, reproduces the package's observations:
    the reset's (unclipped, previous = current), then each step's (clipped). faucet-open's
    reset frame is stale in the package: given the recorded one, the first two match too."""
    metas, arrays = ci_probe
    meta = next(m for m in metas if m["task"] == task)
    ref = arrays[f"{task}/{meta['episode']}/obs"]
    states = _row_states(meta, arrays)
    frames = PrevFrames(task, num_envs=1)
    if task in RESET_FRAME_STALE:
        frames.reset([0], ref[:1, :18])
    got = np.concatenate([frames.observe(s) for s in states])
    np.testing.assert_allclose(got, ref, atol=1e-6, rtol=0)
    if task in RESET_FRAME_STALE:  # without the package's reset frame: only from step 2
        frames.reset([0])
        again = np.concatenate([frames.observe(s) for s in states])
        assert np.abs(again[:2] - ref[:2]).max() > 1e-6
        np.testing.assert_allclose(again[2:], ref[2:], atol=1e-6, rtol=0)


def _row_states(meta: dict, arrays: dict) -> list[MwState]:
    from mw_replay import episode_model, kinematics

    task, k = meta["task"], meta["episode"]
    fields = ("qpos", "qvel", "mocap_pos", "mocap_quat", "ctrl", "qacc_warmstart")
    rows = {f: arrays[f"{task}/{k}/{f}"] for f in fields}
    model = episode_model(meta, "robot/", arrays)
    kin, _ = kinematics(model, rows, None, "robot/")
    target = np.asarray(meta["target"])[None]
    return [
        MwState(model, Kinematics(*(a[t : t + 1] for a in vars(kin).values())), target)
        for t in range(len(kin.qpos))
    ]


@pytest.mark.reference
@pytest.mark.parametrize("task", ["door-open-v3", "stick-pull-v3"])
def test_a_row_alone_gives_the_same_bits_as_in_a_batch(ci_probe, task: str) -> None:
    """An env's observation and success do not depend on which envs share its batch (an
    expert's actions would otherwise depend on num_envs)."""
    metas, arrays = ci_probe
    meta = next(m for m in metas if m["task"] == task)
    singles = _row_states(meta, arrays)
    fields = list(vars(singles[0].kin))
    kin = Kinematics(*(np.concatenate([getattr(s.kin, f) for s in singles]) for f in fields))
    batch = MwState(singles[0].model, kin, np.repeat(singles[0].target, len(singles), axis=0))
    alone = np.concatenate([observation(task, s, None) for s in singles])
    assert np.array_equal(observation(task, batch, None), alone)
    assert np.array_equal(success(task, batch), np.concatenate([success(task, s) for s in singles]))


@pytest.mark.reference
def test_partially_observable_zeroes_only_the_goal(ci_probe) -> None:
    metas, arrays = ci_probe
    meta = next(m for m in metas if m["task"] == "hammer-v3")
    state = _row_states(meta, arrays)[5]
    shown = observation("hammer-v3", state, None)
    hidden = observation("hammer-v3", state, None, partially_observable=True)
    assert np.all(hidden[:, 36:] == 0) and np.any(shown[:, 36:] != 0)
    np.testing.assert_array_equal(hidden[:, :36], shown[:, :36])


@pytest.mark.reference
def test_stick_start_is_the_reset_state(ci_probe) -> None:
    """stick-push's `stick_init_pos` is the stick body's position in the episode's first
    kinematics (what `MwState.init` carries)."""
    metas, arrays = ci_probe
    for meta in (m for m in metas if m["task"] == "stick-push-v3"):
        first = _row_states(meta, arrays)[0]
        np.testing.assert_allclose(first.body_pos("stick")[0], meta["stick_init_pos"], atol=1e-12)


@pytest.mark.reference
def test_stick_push_refuses_a_state_without_contacts(ci_probe) -> None:
    metas, arrays = ci_probe
    meta = next(m for m in metas if m["task"] == "stick-push-v3")
    state = _row_states(meta, arrays)[3]
    with pytest.raises(ValueError, match="touching"):
        success("stick-push-v3", state)
    no_grasp = MwState(state.model, state.kin, state.target, state.kin, np.zeros(1, bool))
    assert not success("stick-push-v3", no_grasp)[0]


@pytest.mark.reference
def test_unknown_names_are_refused_clearly(ci_probe) -> None:
    metas, arrays = ci_probe
    state = _row_states(next(m for m in metas if m["task"] == "hammer-v3"), arrays)[0]
    with pytest.raises(UnknownName, match=r"unknown Meta-World task .hammer-v2.*reach-v3"):
        success("hammer-v2", state)
    with pytest.raises(UnknownName, match="hammer-v2"):
        observation("hammer-v2", state, None)
    with pytest.raises(UnknownElement, match="no site named 'RoundNut'"):
        success("assembly-v3", state)  # a hammer model has no nut
    other = compiled(metas[0]["xml"], "")
    with pytest.raises(UnknownElement, match="robot/hand"):
        MwState(other, state.kin, state.target).hand_pos()


def test_xyzw_follows_scipy_sign_convention() -> None:
    """SciPy pivots on the largest of (m00, m11, m22, trace) and keeps that component
    positive, so w can be negative (values checked with SciPy 1.17's convention)."""
    half_turn = axis_angle_to_mat(np.array([[0.0, 0.0, np.pi * 0.9], [np.pi * 0.9, 0.0, 0.0]]))
    q = xyzw_from_mat(half_turn)
    np.testing.assert_allclose(np.abs(q[:, 3]), np.cos(np.pi * 0.45), atol=1e-12)
    assert q[0, 2] > 0 and q[1, 0] > 0  # the pivots (z, then x), not w, are positive
    assert np.all(xyzw_from_mat(np.eye(3)[None]) == [0.0, 0.0, 0.0, 1.0])


@pytest.mark.reference
@pytest.mark.sweep  # all 50 tasks: > 30 min (its probe's timeout) on a loaded 2-core machine
def test_all_50_tasks_match_the_reference(mw_python: Path, tmp_path: Path) -> None:
    run_probe(mw_python, tmp_path, "all", episodes=3, steps=250)
    metas, arrays = load_probe(tmp_path)
    table = check_episodes(metas, arrays)
    assert len(table) == 50
    for task, row in sorted(table.items()):
        print(task, *row)
