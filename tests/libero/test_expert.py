"""The LIBERO expert (`policy=libero_expert`) solves pick-and-place tasks it was not tuned
on, through `run_task` and LIBERO's own controller (osc_pose).

Every task of libero_spatial and libero_object was used while the expert was written,
so the held-out tasks are LIBERO-PRO's `_swap` variants (the same objects with their
places swapped: layouts the expert never saw), from init states it never ran."""

from __future__ import annotations

import pytest

from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.libero.scene import load_task
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
