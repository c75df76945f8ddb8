"""The LIBERO expert (`policy=libero_expert`) solves pick-and-place tasks it was not tuned
on, through `run_task` and LIBERO's own controller (osc_pose).

Every task of libero_spatial and libero_object was used while the expert was written,
so the held-out tasks are LIBERO-PRO's `_swap` variants (the same objects with their
places swapped: layouts the expert never saw), from init states it never ran."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.libero.expert.clearance import Boxes, box_gap, overhang_escape
from metasim.libero.importer.scene import load_task
from metasim.scene.compile import compile_scene

OPTIONS = {"actions": {"space": "osc_pose", "gripper": "pm1_open_neg"}}


def _successes(ref: str, episodes: list[int]) -> dict[int, bool]:
    compiled = compile_scene(load_task(ref).scene)
    spec = RolloutSpec.of("libero_expert", OPTIONS, num_envs=len(episodes), seed=0)
    records = list(run_task(compiled, spec, episodes))
    assert all(r.error is None for r in records), [r.error for r in records]
    return {r.episode: r.success for r in records}


@pytest.mark.parametrize("ref", ["libero:libero_spatial_swap/2", "libero:libero_object_swap/3"])
def test_expert_solves_held_out_tasks(ref: str) -> None:
    """A held-out spatial and object task from two init states each (7 and 29); about
    6 s per task on 2 shared cores."""
    assert _successes(ref, [7, 29]) == {7: True, 29: True}


@pytest.mark.slow
def test_expert_takes_the_bowl_out_of_the_drawer() -> None:
    """libero_spatial task 4 (the bowl in the cabinet's open top drawer), two init states
    from the held-out range 20-49 (the expert was tuned on 0-19) on which the expert
    failed before its grasp side and opening were chosen from the fixtures' geoms (a
    finger landed on the drawer's wall) and the bowl was slid out from under the
    cabinet's top before the lift; about 10 s."""
    assert _successes("libero:libero_spatial/4", [22, 33]) == {22: True, 33: True}


def test_box_gap_is_the_separation_of_oriented_boxes() -> None:
    """Apart along a face: the distance; apart along a rotated box's face: the distance
    to that face; overlapping: negative."""
    c = np.sqrt(0.5)
    turned = np.array([[c, -c, 0.0], [c, c, 0.0], [0.0, 0.0, 1.0]])
    unit = Boxes(np.zeros(3), np.full(3, 0.5), np.eye(3))
    assert box_gap(unit, Boxes(np.array([2.0, 0, 0]), np.full(3, 0.5), np.eye(3))) == 1.0
    gap = box_gap(unit, Boxes(np.array([0.9, 0.9, 0]), np.full(3, 0.5), turned))
    np.testing.assert_allclose(gap, 0.9 * np.sqrt(2) - 0.5 - 0.5 * np.sqrt(2), atol=1e-12)
    assert box_gap(unit, Boxes(np.array([0.8, 0.0, 0.0]), np.full(3, 0.5), turned)) < 0


def test_overhang_escape_slides_out_from_under_a_shelf() -> None:
    """A round footprint (radius 5 cm) half under a shelf whose edge runs along y at
    x = 0.02 leaves along +x to 1 cm past the edge; one beside the shelf, or under a
    shelf above the object's centre only in x-y, does not move."""
    shelf = Boxes(
        np.array([[[-0.2, 0.0, 0.3]]]), np.array([[[0.22, 0.3, 0.01]]]), np.eye(3)[None, None]
    )
    center = np.array([[0.0, 0.0, 0.1]])
    shift = overhang_escape(center, np.array([0.05]), shelf)
    np.testing.assert_allclose(shift, [[0.08, 0.0]], atol=1e-12)
    beside = overhang_escape(np.array([[0.2, 0.0, 0.1]]), np.array([0.05]), shelf)
    np.testing.assert_allclose(beside, [[0.0, 0.0]])
    above = overhang_escape(np.array([[0.0, 0.0, 0.5]]), np.array([0.05]), shelf)
    np.testing.assert_allclose(above, [[0.0, 0.0]])
