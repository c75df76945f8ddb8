"""The native MuJoCo backend: exact state round trips, determinism across batch sizes
and threads, per-env model edits, rendering."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from metasim.sim import ModelEdit, get_backend
from metasim.tasks.task import TaskRuntime


def _start(compiled, n, seeds=None, **kw):
    handler = get_backend("mujoco").launch(compiled, n, **kw)
    task = TaskRuntime(compiled)
    state = task.sample_initial(handler.default_state(n), seeds or list(range(n)))
    handler.set_state(state)
    return handler, state


def _ctrl_sequence(compiled, state, steps):
    rng = np.random.default_rng(1)
    idx = compiled.index
    ctrl = np.repeat(state.ctrl[None], steps, axis=0)
    ctrl[:, :, idx.arm_act] += rng.normal(
        0, 0.05, size=(steps, state.ctrl.shape[0], len(idx.arm_act))
    )
    return ctrl


def test_state_round_trip_is_exact(lift_scene):
    h, _ = _start(lift_scene, 3)
    for _ in range(5):
        h.step(h.get_state().ctrl)
    s1 = h.get_state()
    h.set_state(s1)
    s2 = h.get_state()
    assert s1.allclose(s2, atol=0.0)
    ctrl = _ctrl_sequence(lift_scene, s1, 10)
    for c in ctrl:
        h.step(c)
    a = h.get_state()
    h.set_state(s1)
    for c in ctrl:
        h.step(c)
    assert a.allclose(h.get_state(), atol=0.0), "replaying from a restored state must be exact"


def test_batch_and_threads_do_not_change_physics(lift_scene):
    h4, s4 = _start(lift_scene, 4, seeds=[10, 11, 12, 13], nthread=2)
    h1, _ = _start(lift_scene, 1, seeds=[12], nthread=1)
    ctrl = _ctrl_sequence(lift_scene, s4, 15)
    for c in ctrl:
        h4.step(c)
        h1.step(c[2:3])
    np.testing.assert_array_equal(h4.get_state().qpos[2], h1.get_state().qpos[0])


def test_reset_subset_leaves_others(lift_scene):
    h, s = _start(lift_scene, 3)
    for _ in range(3):
        h.step(s.ctrl)
    before = h.get_state()
    h.reset([1], s.take([1]))
    after = h.get_state()
    np.testing.assert_array_equal(after.qpos[[0, 2]], before.qpos[[0, 2]])
    np.testing.assert_array_equal(after.qpos[1], s.qpos[1])


def test_per_env_model_edit(lift_scene):
    h, s = _start(lift_scene, 2, seeds=[5, 5])
    cube = lift_scene.index.object_body[0]
    h.apply(ModelEdit("body_mass", int(cube), np.array([0.08, 50.0])))
    np.testing.assert_array_equal(h.model_values("body_mass", int(cube)), [0.08, 50.0])
    mass = h.model.body_mass[cube]
    for _ in range(2):
        h.step(s.ctrl)
    h.render("front")
    assert h.model.body_mass[cube] == mass  # the scene's model itself is left as compiled
    with pytest.raises(ValueError):
        h.apply(ModelEdit("body_mass", int(cube), np.array([1.0])))


def test_render_gives_images(lift_scene):
    h, _ = _start(lift_scene, 2)
    img = h.render("front")
    assert img.shape == (2, 256, 256, 3) and img.dtype == np.uint8
    assert img.std() > 5
    small = h.render("front", env_ids=[1], width=64, height=48)
    assert small.shape == (1, 48, 64, 3)


def test_per_env_gravity(lift_scene):
    h, s = _start(lift_scene, 2, seeds=[5, 5])
    cube = lift_scene.index.object_qpos[0]
    lifted = s.copy()
    lifted.qpos[:, cube + 2] += 0.05  # hold the cube 5 cm above the table
    h.set_state(lifted)
    h.apply(ModelEdit("gravity", 0, np.array([[0, 0, -9.81], [0, 0, 0.0]])))
    for _ in range(10):
        h.step(lifted.ctrl)
    z = h.get_state().qpos[:, cube + 2]
    assert z[0] < lifted.qpos[0, cube + 2] - 0.04  # fell
    assert abs(z[1] - lifted.qpos[1, cube + 2]) < 1e-6  # floats


def test_per_env_edits_step_as_a_model_copy_per_env(lift_scene):
    """Envs with their own masses, table height and gravity on two threads (one on the
    scene's model, one on a twin, each env's rows loaded before it runs) step bitwise as
    one env on its own model copy holding those values; the scene's model is untouched."""
    import copy
    import dataclasses

    n, cube = 4, int(lift_scene.index.object_body[0])
    mass = np.array([0.05, 0.2, 1.0, 3.0])
    table = np.array([[0.0, 0.0, -0.01 * k] for k in range(n)])
    gravity = np.array([[0.0, 0.0, -9.81], [0.0, 0.5, -9.81], [0.0, 0.0, -5.0], [0.2, 0, -9]])
    before = lift_scene.model.body_pos.copy()
    h, s = _start(lift_scene, n, seeds=[3] * n, nthread=2)
    h.apply(ModelEdit("body_mass", cube, mass))
    h.apply(ModelEdit("body_pos", 1, lift_scene.model.body_pos[1] + table))
    h.apply(ModelEdit("gravity", 0, gravity))
    h.set_state(s)
    ctrl = _ctrl_sequence(lift_scene, s, 12)
    for c in ctrl:
        h.step(c)
    for i in range(n):
        model = copy.copy(lift_scene.model)
        model.body_mass[cube] = mass[i]
        model.body_pos[1] = lift_scene.model.body_pos[1] + table[i]
        model.opt.gravity[:] = gravity[i]
        own, _ = _start(dataclasses.replace(lift_scene, model=model), 1, seeds=[3], nthread=1)
        own.set_state(s.take([i]))
        for c in ctrl:
            own.step(c[i : i + 1])
        np.testing.assert_array_equal(h.get_state().qpos[i], own.get_state().qpos[0])
        np.testing.assert_array_equal(h.kinematics().body_pos[i], own.kinematics().body_pos[0])
    np.testing.assert_array_equal(h.model.body_pos, before)


def _plain_steps(compiled, state, env, ctrls, observe):
    """Env `env` stepped on a plain MjData with mj_step per substep: per control step,
    the data right after substep `observe` (qpos, xpos, site_xpos), the state that
    substep started from (qpos), and the state after the step."""
    import mujoco

    m = compiled.model
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = state.qpos[env], state.qvel[env], state.ctrl[env]
    d.mocap_pos[:], d.mocap_quat[:] = state.mocap_pos[env], state.mocap_quat[env]
    d.qacc_warmstart[:] = state.qacc_warmstart[env]
    d.time = state.time[env]
    out = []
    for c in ctrls:
        d.ctrl[:] = c[env]
        for k in range(1, compiled.substeps + 1):
            if k == observe:
                before = d.qpos.copy()
            mujoco.mj_step(m, d)
            if k == observe:
                seen = (d.qpos.copy(), d.xpos.copy(), d.site_xpos.copy(), before)
        out.append((*seen, d.qpos.copy()))
    return out


@pytest.mark.parametrize("observe", [1, 3])
@pytest.mark.parametrize("controller", ["none", "host", "batch"])
def test_observe_substep_shows_the_data_right_after_that_substep(lift_scene, observe, controller):
    """With an observation instant k, kinematics(at="observed") is MuJoCo's data right after
    the k-th mj_step (qpos after it, poses of the state it started from), and
    render(observed=True) renders those poses; the physics is bitwise unchanged."""
    assert lift_scene.substeps > 3
    seen_h, state = _start(lift_scene.observed_at(observe), 2, seeds=[3, 4], nthread=2)
    plain_h, _ = _start(lift_scene, 2, seeds=[3, 4], nthread=2)
    assert seen_h.observe_substep == observe and plain_h.observe_substep is None
    ctrls = _ctrl_sequence(lift_scene, state, 4)
    substep: Any = None
    if controller != "none":  # a host controller every substep: mj_step1/mj_step2

        def substep(i, k, m, d):  # a do-nothing controller
            return None

        if controller == "batch":  # all envs substep by substep (the lockstep path)
            substep.batch = lambda k, models, datas: None  # type: ignore[attr-defined]

    # before any step: the reset state's own
    np.testing.assert_array_equal(
        seen_h.kinematics(at="observed").body_pos, seen_h.kinematics().body_pos
    )
    want = [_plain_steps(lift_scene, state, e, ctrls, observe) for e in range(2)]
    site = lift_scene.index.ee_site
    cam = "front"
    for t, c in enumerate(ctrls):
        seen_h.step(c, substep)
        plain_h.step(c, substep)
        np.testing.assert_array_equal(seen_h.get_state().qpos, plain_h.get_state().qpos)
        kin = seen_h.kinematics(at="observed")
        for e in range(2):
            qpos, xpos, site_xpos, before, after = want[e][t]
            np.testing.assert_array_equal(kin.qpos[e], qpos)
            np.testing.assert_array_equal(kin.body_pos[e], xpos)
            np.testing.assert_array_equal(kin.site_pos[e, site], site_xpos[site])
            np.testing.assert_array_equal(seen_h.get_state().qpos[e], after)
        assert not np.array_equal(kin.site_pos[:, site], seen_h.kinematics().site_pos[:, site])
    # the image is the one of the state the observed substep started from
    img = seen_h.render(cam, width=64, height=48, observed=True)
    end = seen_h.render(cam, width=64, height=48)
    state_before = seen_h.get_state()
    for e in range(2):
        state_before.qpos[e] = want[e][-1][3]
    plain_h.set_state(state_before)
    np.testing.assert_array_equal(img, plain_h.render(cam, width=64, height=48))
    assert img.shape == end.shape
    # without an instant (the scene's None): the end of the step
    np.testing.assert_array_equal(
        plain_h.kinematics(at="observed").site_pos, plain_h.kinematics().site_pos
    )


def test_observe_substep_is_checked(lift_scene):
    for bad in (lift_scene.substeps + 1, 0):
        with pytest.raises(ValueError, match="observe_substep"):
            get_backend("mujoco").launch(lift_scene.observed_at(bad), 1)
