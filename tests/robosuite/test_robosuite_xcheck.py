"""The success cross-check against robosuite (metasim.robosuite.checks.xcheck), bounded
for CI: the expert's first two Door episodes in metasim, replayed in robosuite 1.4.0 from
their start states (the door's placed pose included); both sides succeed, robosuite within
a few steps of metasim. The full figure (4 tasks x 20 episodes) is in docs/log/robosuite.md."""

from __future__ import annotations

import pytest

from metasim.evaluate.config import compose
from metasim.reference.benchmark import check_argv
from metasim.robosuite.checks.xcheck import replay, run_metasim, summarize
from metasim.robosuite.importer.export import MODEL_SEED
from metasim.robosuite.reference.simulator import RobosuiteRef
from metasim.robosuite.tasks import task_facts


def test_xcheck_is_a_registered_check() -> None:
    assert check_argv("robosuite", "xcheck") == ("robosuite", "xcheck")


@pytest.mark.reference
def test_door_expert_successes_are_robosuite_successes(ref: RobosuiteRef) -> None:
    facts = task_facts("Door")
    ref.load(facts.env, seed=MODEL_SEED, placed=list(facts.placed))
    spec = compose(["policy=robosuite_expert", "num_envs=2"]).rollout
    rows = [replay(ref, ep) for ep in run_metasim("Door", spec, [0, 1])]
    assert all(r.metasim_success and r.reference_success for r in rows)
    for r in rows:
        assert r.metasim_success_step is not None and r.reference_success_step is not None
        assert abs(r.metasim_success_step - r.reference_success_step) <= 5
    summary = summarize(rows)["all"]
    assert (summary["both"], summary["confirmed"]) == (2, 1.0)


@pytest.mark.reference
def test_a_replay_starts_from_the_episode_controller_included(ref: RobosuiteRef) -> None:
    """robosuite's replay of a metasim episode follows it joint for joint (to PART_ATOL)
    until the fingers touch the door's handle, whatever the reference ran before (episode 1
    is replayed first): its OSC is built at the episode's start and its gripper command
    starts at zero, as metasim's. With the controller the previous replay (or the load's
    reset) left, the runs parted at the first step (3-7e-3 rad) and 10 of 20 Door
    successes went unconfirmed. Where they part now is MuJoCo 4.0's box-mesh contacts
    (docs/robosuite.md), not before step 80."""
    facts = task_facts("Door")
    ref.load(facts.env, seed=MODEL_SEED, placed=list(facts.placed))
    spec = compose(["policy=robosuite_expert", "num_envs=2"]).rollout
    episodes = {ep.episode: ep for ep in run_metasim("Door", spec, [0, 1])}
    rows = [replay(ref, episodes[1]), replay(ref, episodes[0])]
    for r in rows:
        assert r.parted_step is None or r.parted_step > 80, r
        assert r.reference_success_step == r.metasim_success_step
