"""The closed-loop goal-check disagreement of libero_spatial_3 init 31 (issue #20), on the
two LIBERO states it involves (tests/data/goal_check/libero_spatial_3_init31.npz, the
reference's qpos (48,) and qvel (43,) layout, recorded from `metasim libero xcheck
--closed-loop`):

- `pre`: the state entering the last physics substep of LIBERO's env.step 92, the one
  whose kinematics and contacts robosuite's data still hold when LIBERO's
  `_check_success` runs in that step (it said success);
- `post`: qpos/qvel after that substep, 2 ms later, which env.step returns and which the
  shadow metasim env was synced to (metasim's check said no).

The bowl sits 1.03 cm above the plate's origin, 5.4 mm off it in x-y, and touches it at
the first (36 um of penetration) but not at the second. Both goal checks flip with it:
they agree on each state; the closed loop compared them on different states."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

from metasim.libero.importer.init_states import init_state_map
from metasim.libero.importer.scene import load_task
from metasim.libero.kinds.predicates import subtree_geoms
from metasim.libero.reference.simulator import ReferenceSim
from metasim.robosuite.success import goal_holds, task_view, touching
from metasim.scene.compile import CompiledScene, compile_scene

DATA = Path(__file__).parents[1] / "data" / "goal_check" / "libero_spatial_3_init31.npz"


@pytest.fixture(scope="module")
def states() -> dict[str, np.ndarray]:
    with np.load(DATA) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def scene() -> CompiledScene:
    return compile_scene(load_task("libero:libero_spatial/3").scene)


def _metasim_state(scene: CompiledScene, qpos: np.ndarray, qvel: np.ndarray) -> mujoco.MjData:
    """metasim's model set to a LIBERO state (by joint name) after mj_forward."""
    task = load_task("libero:libero_spatial/3")
    data = mujoco.MjData(scene.model)
    init_state_map(task.problem, scene).apply(
        scene.model, data, np.concatenate([[0.0], qpos, qvel])
    )
    return data


def _atoms(scene: CompiledScene, data: mujoco.MjData) -> tuple[bool, float, bool]:
    """resting_on's three conditions for the bowl on the plate: plate not above the bowl,
    their x-y distance (m), touching."""
    m = scene.model
    bowl, plate = m.body("akita_black_bowl_1").id, m.body("plate_1").id
    view = task_view(data)
    assert view.contacts is not None
    touch = touching(view.contacts[0], subtree_geoms(m, bowl), subtree_geoms(m, plate))
    xy = float(np.linalg.norm(data.xpos[bowl, :2] - data.xpos[plate, :2]))
    return bool(data.xpos[plate, 2] <= data.xpos[bowl, 2]), xy, touch


def test_only_the_contact_atom_flips_between_the_two_states(
    scene: CompiledScene, states: dict[str, np.ndarray]
) -> None:
    pre = _metasim_state(scene, states["pre_qpos"], states["pre_qvel"])
    post = _metasim_state(scene, states["post_qpos"], states["post_qvel"])
    (z_pre, xy_pre, touch_pre), (z_post, xy_post, touch_post) = (
        _atoms(scene, pre),
        _atoms(scene, post),
    )
    assert z_pre and z_post and xy_pre < 0.03 and xy_post < 0.03
    assert touch_pre and not touch_post
    assert goal_holds(scene, pre) and not goal_holds(scene, post)


@pytest.mark.reference
@pytest.mark.slow
def test_metasim_check_equals_libero_check_on_each_state(
    ref: ReferenceSim, scene: CompiledScene, states: dict[str, np.ndarray]
) -> None:
    ref.load("libero_spatial", 3, cameras=False)
    ref.reset(init=31, seed=0)
    verdicts = {}
    for name in ("pre", "post"):
        qpos, qvel = states[f"{name}_qpos"], states[f"{name}_qvel"]
        libero = ref.check_success(qpos, qvel)  # set_state + sim.forward, then the check
        verdicts[name] = (libero, goal_holds(scene, _metasim_state(scene, qpos, qvel)))
    print(verdicts)
    assert verdicts == {"pre": (True, True), "post": (False, False)}
