"""The substep schedule every stepping path runs (metasim.sim.schedule): the operations
of a control step of each kind, and the step instants a handler gives."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.sim import get_backend
from metasim.sim.base import INSTANTS
from metasim.sim.schedule import schedule


def test_a_plain_step_is_one_call_of_every_substep() -> None:
    plan = schedule(25, None, False, False, False)
    assert plan.empty and not plan.split
    assert plan.ops == (("steps", 25),)
    assert schedule(25, None, False, False, False) is plan  # computed once per kind


def test_a_step_that_reports_contacts_is_not_empty() -> None:
    """(MuJoCo's batch keeps no contact list: such a step runs in lockstep.)"""
    plan = schedule(25, None, False, False, True)
    assert not plan.empty and plan.ops == (("steps", 25),)


@pytest.mark.parametrize(
    ("observe", "ops"),
    [
        (1, (("mark", 0), ("steps", 1), ("keep", 0), ("steps", 24))),
        (24, (("steps", 23), ("mark", 23), ("steps", 1), ("keep", 23), ("steps", 1))),
        (25, (("steps", 24), ("mark", 24), ("steps", 1), ("keep", 24))),
    ],
)
def test_an_observation_instant_splits_the_calls_around_its_substep(observe, ops) -> None:
    plan = schedule(25, observe, False, False, False)
    assert not plan.empty and plan.ops == ops


@pytest.mark.parametrize(("legacy", "controller"), [(True, False), (False, True), (True, True)])
def test_something_between_substeps_splits_each_one(legacy, controller) -> None:
    plan = schedule(3, 2, legacy, controller, True)
    assert plan.split and not plan.empty and plan.contacts
    assert plan.ops == (("split", 0), ("mark", 1), ("split", 1), ("keep", 1), ("split", 2))
    assert schedule(3, None, legacy, controller, False).ops == tuple(("split", k) for k in range(3))


def test_kinematics_at_names_one_of_the_instants(lift_scene) -> None:
    h = get_backend("mujoco").launch(lift_scene, 2, nthread=1)
    try:
        h.step(h.get_state().ctrl)
        kin = {at: h.kinematics(at=at) for at in INSTANTS}
        assert kin["forward"] is h.kinematics()
        assert kin["observed"] is not kin["step"]  # (no instant set: the step's end)
        np.testing.assert_array_equal(kin["observed"].body_pos, kin["forward"].body_pos)
        with pytest.raises(ValueError, match="kinematics at must be one of"):
            h.kinematics(at="after")  # type: ignore[arg-type]
    finally:
        h.close()
