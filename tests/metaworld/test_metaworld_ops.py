"""The Meta-World reference's ops for metasim's importer and parity: a variation's reset
state (reproduced here in metasim's own MuJoCo), the package's scripted policies on given
observations, rollouts of given actions, and the package's success on given states. All
on the real package in its venv; MT1 benchmarks (one task's 50 variations) keep it short."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from metasim.metaworld.reference import init_states as ref_states
from metasim.metaworld.reference.simulator import VENV, MetaWorldRef, MetaWorldRefError
from metasim.metaworld.reference.sweep import reset_changes, reset_markdown

pytestmark = pytest.mark.reference

PACKAGE = VENV / "lib" / "python3.11" / "site-packages" / "metaworld"


def _reproduce(xml: str, s: dict, k: int) -> mujoco.MjData:
    """Variation k's reset state in metasim's MuJoCo: the task XML compiled afresh, the
    model fields reset wrote set by row, then qpos, qvel, mocap and mj_forward."""
    m = mujoco.MjModel.from_xml_path(str(PACKAGE / xml))
    for field, change in s["model"].items():
        target = getattr(m, field)
        if target.shape[1:] == change["values"].shape[2:]:  # eq_data: 11 wide in 3.3, 12 in 4
            target[change["rows"]] = change["values"][k]
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = s["qpos"][k], s["qvel"][k]
    d.mocap_pos[:], d.mocap_quat[:] = s["mocap_pos"][k], s["mocap_quat"][k]
    mujoco.mj_forward(m, d)
    return d


@pytest.mark.parametrize("task", ["pick-place-v3", "door-open-v3"])
def test_init_states_reproduce_the_reset_in_metasims_mujoco(mw_ref: MetaWorldRef, task: str):
    s = mw_ref.init_states(task, "MT1", variations=[0, 3])
    assert s["variations"] == [0, 3] and s["max_path_length"] == 500
    assert sum(j[2] for j in s["joints"]) == s["qpos"].shape[1]
    assert s["obs"].shape == (2, 39) and s["target_pos"].shape == (2, 3)
    assert np.array_equal(s["rand_vec"], mw_ref.variations("MT1", task)[[0, 3]])
    goal = s["model"]["site_pos"]
    assert "goal" in goal["names"]  # reset moves the goal site to _target_pos
    assert not np.allclose(s["target_pos"][0], s["target_pos"][1])
    np.testing.assert_allclose(s["attrs"]["_target_pos"], s["target_pos"])
    if task == "door-open-v3":  # the door's body moves with the variation
        door = s["model"]["body_pos"]
        assert door["names"] == ["door"] and not np.allclose(door["values"][0], door["values"][1])
    xml = mw_ref.facts(task)["xml"]
    for k in range(2):
        d = _reproduce(xml, s, k)
        tcp = (d.site("rightEndEffector").xpos + d.site("leftEndEffector").xpos) / 2
        np.testing.assert_allclose(tcp, s["tcp_center"][k], atol=1e-9)
        np.testing.assert_allclose(d.body("hand").xpos, s["hand"][k], atol=1e-9)
        np.testing.assert_allclose(d.body("hand").xpos, s["obs"][k, :3], atol=1e-9)
    with pytest.raises(MetaWorldRefError, match="at least one"):
        mw_ref.init_states(task, "MT1", variations=[])
    start = mw_ref.rollout(task, np.zeros((0, 4)), benchmark="MT1", variation=3)
    np.testing.assert_array_equal(start["qpos"][0], s["qpos"][1])  # one reset, both ops


def test_init_states_are_cached_on_disk(mw_ref: MetaWorldRef, tmp_path, monkeypatch):
    monkeypatch.setenv("METASIM_CACHE", str(tmp_path))
    first = ref_states.init_states("door-open-v3", "MT1", variations=[1, 2], ref=mw_ref)
    path = ref_states.cache_file("door-open-v3", "MT1", "train", 0, [1, 2])
    assert path.exists() and path.is_relative_to(tmp_path)

    def no_reference(*args: object, **kwargs: object) -> None:  # injected: must not start
        raise AssertionError("the cache was not read")

    monkeypatch.setattr(ref_states, "MetaWorldRef", no_reference)
    again = ref_states.init_states("door-open-v3", "MT1", variations=[1, 2])
    assert again.joints == first.joints and again.variations == (1, 2)
    for key in ref_states.ARRAYS:
        np.testing.assert_array_equal(getattr(again, key), getattr(first, key))
    assert again.model.keys() == first.model.keys()
    np.testing.assert_array_equal(again.model["body_pos"].values, first.model["body_pos"].values)
    assert again.model["body_pos"].names == ("door",) and again.qpos.shape == (2, 10)
    assert ref_states.cache_file("door-open-v3", "MT1", "train", 0, [1]) != path


def test_expert_actions_drive_the_packages_own_episode(mw_ref: MetaWorldRef):
    """A closed loop through `expert_actions` (the policy on the observation, the env
    stepped elsewhere) lands where the package's own loop lands after the same steps."""
    task, steps = "reach-v3", 15
    obs = mw_ref.init_states(task, "MT1")["obs"][0]
    actions: list[np.ndarray] = []
    for _ in range(steps):
        actions.append(mw_ref.expert_actions(task, obs[None])[0])
        run = mw_ref.rollout(task, np.array(actions), benchmark="MT1")
        obs = run["obs"][-1]
    own = mw_ref.expert("MT1", task, 0, max_steps=steps)
    np.testing.assert_allclose(run["tcp_center"][-1], own["hand"], atol=1e-12)
    batch = mw_ref.expert_actions(task, run["obs"][:-1])
    np.testing.assert_allclose(batch, np.array(actions), atol=0)  # rows as one at a time
    with pytest.raises(MetaWorldRefError, match="no scripted policy"):
        mw_ref.expert_actions("reach-v9", obs[None])


def test_rollout_reports_positions_contacts_and_a_frame(mw_ref: MetaWorldRef):
    down = np.tile([0.0, 0.0, -1.0, -1.0], (30, 1))  # straight down, gripper open
    s = mw_ref.init_states("pick-place-v3", "MT1")
    run = mw_ref.rollout("pick-place-v3", down, benchmark="MT1", camera="corner", size=(64, 48))
    assert run["qpos"].shape == (31, 16) and run["success"].shape == (30,)
    assert run["free_joints"] == ["objjoint"] and run["object_pos"].shape == (31, 1, 3)
    np.testing.assert_allclose(run["object_pos"][0, 0], s["attrs"]["obj_init_pos"][0])
    assert np.all(np.diff(run["tcp_center"][:10, 2]) < 0)  # the mocap pulls the hand down
    assert not run["contact"][0] and run["contact"].any()  # it reaches the table
    first = run["contacts"][int(np.argmax(run["contact"]))]
    assert all(c[0] in {"rightpad", "leftpad", "rightclaw", "leftclaw", "hand"} for c in first)
    assert run["frame"].shape == (48, 64, 3) and run["frame"].dtype == np.uint8
    assert run["frame"].std() > 5  # a picture, not a blank
    with pytest.raises(MetaWorldRefError, match="max_path_length"):
        mw_ref.rollout("pick-place-v3", np.zeros((501, 4)), benchmark="MT1")


def test_evaluate_agrees_with_the_steps_success(mw_ref: MetaWorldRef):
    s = mw_ref.init_states("reach-v3", "MT1")
    way = (s["target_pos"][0] - s["tcp_center"][0]) / (0.01 * 40)  # there in 40 steps
    actions = np.tile(np.append(np.clip(way, -1, 1), -1.0), (50, 1))  # then 10 past it
    run = mw_ref.rollout("reach-v3", actions, benchmark="MT1")
    assert run["success"].any() and not run["success"].all()
    got = mw_ref.evaluate(
        "reach-v3", {"qpos": run["qpos"][1:], "qvel": run["qvel"][1:]}, benchmark="MT1"
    )
    np.testing.assert_array_equal(got["success"].astype(bool), run["success"])
    np.testing.assert_allclose(got["obs"][:, :18], run["obs"][1:, :18], atol=1e-12)
    with pytest.raises(ValueError, match="qpos"):
        mw_ref.evaluate("reach-v3", {"qvel": run["qvel"]})


def test_reset_changes_table_names_what_reset_writes(mw_ref: MetaWorldRef):
    result = reset_changes(mw_ref, "MT1", variations=2, shown=2, tasks=["door-open-v3"])
    row = result["tasks"]["door-open-v3"]
    assert "body_pos: door" in row["model"] and "site_pos: goal" in row["model"]
    assert "_target_pos" in row["attrs"] and row["per_variation"] > 0
    assert "| door-open-v3 | body_pos: door;" in reset_markdown(result)


@pytest.mark.parametrize("task", ["basketball-v3", "door-open-v3"])
def test_one_env_taking_every_variation_records_what_new_envs_record(
    mw_ref: MetaWorldRef, task: str
) -> None:
    """init_states' fast path (one env, set_task per variation, put back as built before
    each reset) records the states a new env per variation records. basketball: its
    `_target_pos` is a view of the goal's xpos, which a reused env's next reset rewrites
    (recorded as a copy). All 50 tasks x 4 variations agreed (docs/metaworld.md)."""
    ks = [0, 1, 2]
    new = mw_ref.init_states(task, "MT1", "train", 0, ks, reuse=False)
    one = mw_ref.init_states(task, "MT1", "train", 0, ks, reuse=True)
    for key in ("qpos", "qvel", "mocap_pos", "mocap_quat", "obs", "target_pos", "tcp_center"):
        np.testing.assert_array_equal(one[key], new[key], err_msg=key)
    assert set(one["model"]) == set(new["model"])
    for field in new["model"]:
        np.testing.assert_array_equal(one["model"][field]["values"], new["model"][field]["values"])
    assert len({tuple(t) for t in one["target_pos"]}) == len(ks)  # one per variation
