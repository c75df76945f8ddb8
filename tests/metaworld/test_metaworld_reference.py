"""The Meta-World reference worker: the package's benchmarks, variations and scripted
policies run in its own venv (MuJoCo 3.3.0), never in metasim's process."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.metaworld.reference.simulator import MetaWorldRef, MetaWorldRefError
from metasim.metaworld.reference.sweep import expert_sweep, markdown

pytestmark = pytest.mark.reference

MT10 = ["reach-v3", "push-v3", "pick-place-v3", "door-open-v3", "drawer-open-v3"]


def test_versions_are_the_pinned_ones(mw_ref: MetaWorldRef) -> None:
    got = mw_ref.versions()
    assert got["metaworld"] == "3.1.1"
    assert got["mujoco"] == "3.3.0"  # not metasim's MuJoCo: the venv is separate


def test_mt10_task_names_and_variations(mw_ref: MetaWorldRef) -> None:
    names = mw_ref.tasks("MT10")
    assert len(names) == 10 and set(MT10) <= set(names)
    vecs = mw_ref.variations("MT10", "reach-v3")
    assert vecs.shape == (50, 6)  # 50 variations: object (3) and goal (3) positions
    assert len(np.unique(vecs, axis=0)) == 50
    again = mw_ref.variations("MT10", "reach-v3", seed=1)
    assert not np.allclose(vecs, again)  # the benchmark seed draws the variations


@pytest.mark.parametrize("task", ["reach-v3", "pick-place-v3"])
@pytest.mark.parametrize("variation", [0, 1])
def test_scripted_policy_succeeds(mw_ref: MetaWorldRef, task: str, variation: int) -> None:
    ep = mw_ref.expert("MT10", task, variation)
    assert ep["max_path_length"] == 500 and ep["ran"] == 500  # the full horizon ran
    assert ep["success"] and 0 < ep["steps"] < 500
    assert ep["hand"].shape == (3,)


def test_capped_episode_and_bad_request(mw_ref: MetaWorldRef) -> None:
    ep = mw_ref.expert("MT10", "pick-place-v3", 0, max_steps=5)
    assert ep["ran"] == 5 and not ep["success"]  # too short to pick and place
    with pytest.raises(MetaWorldRefError, match="variations"):
        mw_ref.expert("MT10", "reach-v3", 50)
    with pytest.raises(MetaWorldRefError, match="not in MT10"):
        mw_ref.variations("MT10", "basketball-v3")


def test_facts_of_a_live_env(mw_ref: MetaWorldRef) -> None:
    f = mw_ref.facts("door-open-v3")
    assert f["xml"] == "assets/sawyer_xyz/sawyer_door_pull.xml"  # the file name differs
    assert f["frame_skip"] == 5 and f["timestep"] == 0.0025 and f["action_scale"] == 0.01
    assert f["max_path_length"] == 500 and f["sizes"]["nu"] == 2  # two gripper fingers
    cams = {"topview", "corner", "corner2", "corner3", "corner4", "behindGripper", "gripperPOV"}
    assert set(f["cameras"]) == cams
    assert f["mocap_low"].shape == (3,) and np.all(f["mocap_low"] < f["mocap_high"])


def test_expert_sweep_over_mt10(mw_ref: MetaWorldRef) -> None:
    result = expert_sweep(mw_ref, "MT10", variations=1)
    assert list(result["tasks"]) == mw_ref.tasks("MT10") and result["episodes"] == 10
    # The package's scripted policies solve MT10 (docs/log/metaworld.md).
    assert result["rate"] >= 0.9
    assert all(0 < r["mean_steps"] < 500 for r in result["tasks"].values() if r["success"])
    table = markdown(result)
    assert table.count("| reach-v3 |") == 1 and "MT10 (seed 0)" in table
