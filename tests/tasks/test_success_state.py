"""The success check reads one physics state: poses and contacts of the state the last
physics substep started from (what MuJoCo's data holds right after mj_step, and what
LIBERO's done reads after robosuite's env.step), never poses after the step mixed with
contacts from before it."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.libero.importer.init_states import init_state_map
from metasim.libero.importer.scene import load_task
from metasim.paths import SCENES
from metasim.robosuite.success import goal_holds, task_view
from metasim.scene import compile_file
from metasim.scene.compile import CompiledScene, compile_scene
from metasim.sim import get_backend
from metasim.sim.base import geom_contacts
from metasim.tasks.predicates import TaskView, compile_predicate

BOWL, PLATE = "akita_black_bowl_1", "plate_1"


def test_native_step_kinematics_are_the_poses_mj_step_leaves() -> None:
    """The handler's step poses equal a plain MjData's right after mj_step (state n);
    its kinematics are those after the step (state n + 1); the two differ."""
    compiled = compile_file(str(SCENES / "lift_cube.yaml"))
    m = compiled.model
    h = get_backend("mujoco").launch(compiled, 2, nthread=1)
    h.track_contacts = True
    start = h.default_state(2)
    start.qpos[:, compiled.index.object_qpos[0] + 2] += 0.02  # the cube drops
    h.reset([0, 1], start)
    ctrl = np.tile(start.qpos[0, compiled.index.arm_qpos].mean(), (2, m.nu))
    h.step(ctrl)
    d = mujoco.MjData(m)
    d.qpos[:], d.ctrl[:] = start.qpos[0], ctrl[0]
    mujoco.mj_step(m, d, nstep=compiled.substeps)
    step, now = h.kinematics(at="step"), h.kinematics()
    np.testing.assert_array_equal(step.body_pos[0], d.xpos)
    np.testing.assert_array_equal(step.site_mat[0].reshape(-1, 9), d.site_xmat)
    np.testing.assert_array_equal(step.qpos[0], d.qpos)  # qpos: after the step, as MuJoCo's
    np.testing.assert_array_equal(h.contacts()[0], geom_contacts(d))
    mujoco.mj_kinematics(m, d)
    np.testing.assert_array_equal(now.body_pos[0], d.xpos)
    assert not np.array_equal(step.body_pos, now.body_pos)


def _one_substep_scene() -> tuple[CompiledScene, np.ndarray, np.ndarray]:
    """LIBERO's put_the_bowl_on_the_plate (On bowl plate: touching, < 3 cm apart in x-y)
    with one physics substep per control step; a state where the bowl rests in the plate
    (settled by MuJoCo from init state 0), then moved radially to 2.97 cm off its centre,
    and that radial direction (2,)."""
    task = load_task("libero:libero_goal/8")
    # one substep, observed at the step's end (LIBERO's observation substep 24 is past it)
    one = {"control_hz": 500.0, "observe_substep": None}
    scene = task.scene.model_copy(update={"task": task.scene.task.model_copy(update=one)})
    compiled = compile_scene(scene)
    assert compiled.substeps == 1
    m = compiled.model
    d = mujoco.MjData(m)
    init_state_map(task.problem, compiled).apply(m, d, task.init_states[0])
    adr = m.jnt_qposadr[m.joint(f"{BOWL}/free").id]
    d.qpos[adr : adr + 3] = d.xpos[m.body(PLATE).id] + (0.0296, 0.0, 0.03)
    mujoco.mj_forward(m, d)
    mujoco.mj_step(m, d, nstep=400)
    rel = (d.xpos[m.body(BOWL).id] - d.xpos[m.body(PLATE).id])[:2]
    radial = rel / np.linalg.norm(rel)
    d.qpos[adr : adr + 2] += radial * (0.0297 - np.linalg.norm(rel))
    d.qvel[:] = 0.0
    return compiled, np.concatenate([d.qpos, d.qvel]), radial


@pytest.mark.parametrize("num_envs", [1, 2])  # 2: osc_pose steps the envs in lockstep
def test_success_reads_poses_and_contacts_of_one_state(num_envs: int) -> None:
    """The bowl, resting in the plate just inside LIBERO's 3 cm, is shot outward at
    4 m/s: within the (only) substep it crosses 3 cm. LIBERO's done (poses and contacts
    as mj_step leaves them) holds; poses after the step with the contacts from before
    do not. The env's success is LIBERO's."""
    compiled, settled, radial = _one_substep_scene()
    m = compiled.model
    nq, dof = m.nq, m.jnt_dofadr[m.joint(f"{BOWL}/free").id]
    env = MetasimVectorEnv(
        compiled, num_envs=num_envs, action_space="osc_pose", autoreset=False, nthread=1
    )
    try:
        env.reset(seed=0)
        state = env.handler.get_state()
        state.qpos[:], state.qvel[:] = settled[:nq], settled[nq:]
        state.qvel[:, dof : dof + 2] = 4.0 * radial
        state.qacc_warmstart[:] = 0.0
        env.handler.reset(np.arange(num_envs), state)
        before = env.handler.get_state()
        hold = env.controller.hold_action(env.handler.kinematics())
        _, _, _, _, extras = env.step(hold)
        after = env.handler.get_state()
        success = compile_predicate(compiled.scene.task.success, compiled)
        old = TaskView(env.handler.kinematics(), np.zeros(1), env.handler.contacts())
        assert not success(old).any()  # the old way: the bowl already 3.04 cm out
        d = mujoco.MjData(m)  # what LIBERO reads: the data as mj_step leaves it
        mujoco.mj_setState(m, d, _flat(m, before, 0), mujoco.mjtState.mjSTATE_INTEGRATION)
        d.ctrl[:] = after.ctrl[0]
        mujoco.mj_step(m, d)
        assert goal_holds(compiled, d)
        np.testing.assert_allclose(d.qpos, after.qpos[0], atol=1e-12)
        assert extras["success"].tolist() == [True] * num_envs
    finally:
        env.close()


def _flat(m: mujoco.MjModel, state: object, i: int) -> np.ndarray:
    """Env i's mjSTATE_INTEGRATION row of a SimState (for a plain MjData)."""
    from metasim.sim.mujoco.handler import state_layout

    row = np.zeros(mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_INTEGRATION))
    d = mujoco.MjData(m)
    mujoco.mj_getState(m, d, row, mujoco.mjtState.mjSTATE_INTEGRATION)
    for name, cols in state_layout(m).items():
        row[cols] = np.asarray(getattr(state, name))[i].reshape(-1)
    return row


def test_task_view_of_stepped_data_is_one_state() -> None:
    """`task_view` of data right after mj_step reads its poses and contacts as they are
    (state n), as LIBERO's `_check_success` reads sim.data: no kinematics recomputed."""
    compiled, settled, _ = _one_substep_scene()
    m = compiled.model
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = settled[: m.nq], settled[m.nq :]
    mujoco.mj_step(m, d)
    xpos = d.xpos.copy()
    view = task_view(d)
    np.testing.assert_array_equal(view.kin.body_pos[0], xpos)
    np.testing.assert_array_equal(view.contacts[0] if view.contacts else None, geom_contacts(d))
