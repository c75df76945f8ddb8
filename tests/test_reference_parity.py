"""The parity kit (`metasim.reference.parity`): the actions, the first contact and the
objects at rest that the backend, LIBERO and Meta-World parity checks share."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.reference import parity
from metasim.reference.parity import (
    before_contact,
    contact_step,
    free_steps,
    robot_pairs,
    smooth_actions,
    spread_touch,
    untouched,
    worst,
)

CASES = [(seed, steps) for seed in (0, 1, 7, 1003) for steps in (0, 1, 2, 30, 120)]


def _backend_formula(low: np.ndarray, high: np.ndarray, steps: int, seed: int) -> np.ndarray:
    """The backend parity check's actions as it wrote them before the kit."""
    rng = np.random.default_rng(seed)
    dim = len(low)
    raw = np.zeros((steps, dim))
    for t in range(1, steps):
        raw[t] = 0.8 * raw[t - 1] + 0.5 * rng.normal(size=dim)
    mid, half = 0.5 * (high + low), 0.5 * (high - low)
    out = np.clip(mid + half * np.clip(raw, -1.0, 1.0), low, high)
    if dim == 7:
        out[:, 6] = np.where((np.arange(steps) // 25) % 2 == 0, low[6], high[6])
    return out


def _metaworld_formula(steps: int, rng: np.random.Generator) -> np.ndarray:
    """Meta-World's parity actions as its check wrote them before the kit."""
    out = np.zeros((steps, 4))
    x: np.ndarray = np.zeros(4)
    for t in range(steps):
        x = 0.8 * x + 0.5 * rng.normal(size=4)
        out[t] = np.clip(x, -1.0, 1.0)
    return out


@pytest.mark.parametrize(("seed", "steps"), CASES)
def test_actions_equal_the_backend_and_libero_formula(seed: int, steps: int) -> None:
    box = np.ones(7)
    osc = smooth_actions(-box, box, steps, seed, gripper_block=parity.GRIPPER_BLOCK)
    assert np.array_equal(osc, _backend_formula(-box, box, steps, seed))
    low, high = np.array([-0.5, 0.0, -2.0]), np.array([1.5, 0.2, 2.0])  # an uneven box
    assert np.array_equal(
        smooth_actions(low, high, steps, seed), _backend_formula(low, high, steps, seed)
    )


@pytest.mark.parametrize(("seed", "steps"), CASES)
def test_actions_equal_the_metaworld_formula(seed: int, steps: int) -> None:
    box = np.ones(4)
    ours, theirs = np.random.default_rng([seed, 3]), np.random.default_rng([seed, 3])
    got = smooth_actions(-box, box, steps, ours, lead_zero=False)
    assert np.array_equal(got, _metaworld_formula(steps, theirs))
    assert ours.normal() == theirs.normal()  # the generator was drawn from as far


def test_benchmark_presets_are_the_kits_actions() -> None:
    from metasim.libero.checks.parity import smooth_actions as libero_actions
    from metasim.metaworld.checks.parity import smooth_actions as metaworld_actions

    box = np.ones(7)
    assert np.array_equal(libero_actions(60, 4), _backend_formula(-box, box, 60, 4))
    rng = np.random.default_rng(5)
    assert np.array_equal(
        metaworld_actions(60, rng), _metaworld_formula(60, np.random.default_rng(5))
    )


def test_the_gripper_alternates_in_blocks() -> None:
    low, high = -np.ones(3), np.ones(3)
    a = smooth_actions(low, high, 10, 0, gripper_block=4)
    assert a[:, -1].tolist() == [-1.0] * 4 + [1.0] * 4 + [-1.0] * 2
    assert not a[0, :2].any() and a[1:, :2].any()  # the walk starts at the centre
    assert smooth_actions(low, high, 5, 0, lead_zero=False)[0].any()


def test_robot_pairs_keep_the_contacts_with_one_robot_side() -> None:
    robot = np.array([False, True, True, False])
    pairs = np.array([[1, 2], [1, 3], [0, 3], [0, 2]], dtype=np.int32)
    assert robot_pairs(robot, pairs).tolist() == [[1, 3], [0, 2]]
    assert robot_pairs(robot, np.zeros((0, 2), dtype=np.int32)).shape == (0, 2)
    assert robot_pairs(robot, np.zeros(0)).shape == (0, 2)  # an empty, flat contact list


def test_the_first_contact_and_the_steps_before_it() -> None:
    contact = np.array([False, False, True, False, True])
    assert contact_step(contact) == 3 and contact_step(np.zeros(4, dtype=bool)) == 0
    assert free_steps(3, 5) == 2 and free_steps(0, 5) == 5 and free_steps(1, 5) == 0
    error = np.array([0.1, 0.3, 9.0, 0.2])
    assert before_contact(error, 2) == 0.3 and before_contact(error, 0) == 0.0
    assert before_contact(error, 4) == 9.0


def test_a_touch_spreads_through_a_chain_of_contacts() -> None:
    """robot 1 -> 2 -> 3 in any order; 4 -- 5 touch each other only; 0 (the world, which
    the caller leaves out) would pass it to everything."""
    touched = {1}
    spread_touch(np.array([[3, 2], [4, 5], [2, 1]]), touched)
    assert touched == {1, 2, 3}
    spread_touch(np.zeros((0, 2), dtype=int), touched)
    assert touched == {1, 2, 3}
    world = {1}
    spread_touch(np.array([[1, 0], [0, 4]]), world)
    assert world == {0, 1, 4}


def test_untouched_objects_and_their_worst_error() -> None:
    touched = {"bowl": True, "plate": False, "cup": False}
    assert untouched(touched) == ["plate", "cup"]
    errors = {
        "bowl": np.array([5.0, 6.0]),
        "plate": np.array([0.1, 0.0]),
        "cup": np.array([0.0, 0.2]),
    }
    assert worst(errors, untouched(touched), 2).tolist() == [0.1, 0.2]
    assert worst(errors, None, 2).tolist() == [5.0, 6.0]
    assert worst(errors, [], 3).tolist() == [0.0, 0.0, 0.0]
