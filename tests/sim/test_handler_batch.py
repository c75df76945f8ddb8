"""The native handler's plain control step on MuJoCo's batch (metasim.sim.mujoco.batched)
gives bitwise the state rows, the poses as mj_step left them, the end-of-step poses and
the Jacobians of the handler's lockstep (each env alone), at one and two threads; steps
that report contacts or run per-env edits take the lockstep."""

from __future__ import annotations

import numpy as np
import pytest

from metasim.sim import ModelEdit, get_backend
from metasim.sim.mujoco.handler import BackendHandler
from metasim.tasks.task import TaskRuntime


def _pair(compiled, n: int, nthread: int) -> tuple[BackendHandler, BackendHandler]:
    """Two handlers on the same initial states: one steps on the batch, one in lockstep."""
    out = []
    for _ in range(2):
        h = get_backend("mujoco").launch(compiled, n, nthread=nthread)
        assert isinstance(h, BackendHandler)
        state = TaskRuntime(compiled).sample_initial(h.default_state(n), list(range(n)))
        h.set_state(state)
        out.append(h)
    out[1]._stepper = lambda: None  # type: ignore[method-assign]  # the lockstep
    return out[0], out[1]


def _outputs(h: BackendHandler) -> dict[str, np.ndarray]:
    k, s = h.kinematics(), h.kinematics(at="step")
    out = {"state": h._state.copy()}
    for name in ("body_pos", "body_quat", "site_pos", "site_mat"):
        out[name] = getattr(k, name).copy()
        out["step_" + name] = getattr(s, name).copy()
    for site in h.jacobian_sites:
        out[f"jac{site}"] = h.site_jacobian(site).copy()
    return out


@pytest.mark.parametrize("nthread", [1, 2])
def test_batch_step_is_bitwise_the_per_env_loop(lift_scene, nthread):
    batched, looped = _pair(lift_scene, 5, nthread)
    rng = np.random.default_rng(3)
    ctrl = batched.get_state().ctrl
    arm = lift_scene.index.arm_act
    for t in range(40):
        c = ctrl.copy()
        c[:, arm] += rng.normal(0, 0.2, size=(5, len(arm)))
        batched.step(c)
        looped.step(c)
        if t == 20:  # a reset of some envs in between
            state = batched.get_state()
            batched.reset(np.array([1, 3]), state.take([0, 2]))
            looped.reset(np.array([1, 3]), state.take([0, 2]))
    assert batched._batch is not None and looped._batch is None
    a, b = _outputs(batched), _outputs(looped)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert not np.array_equal(a["body_pos"], a["step_body_pos"])  # two instants, not one


def test_contacts_and_per_env_edits_keep_the_per_env_loop(lift_scene):
    h = get_backend("mujoco").launch(lift_scene, 2, nthread=1)
    assert isinstance(h, BackendHandler)
    h.track_contacts = True
    h.step(h.get_state().ctrl)
    assert h._batch is None
    h.track_contacts = False
    cube = int(lift_scene.index.object_body[0])
    h.apply(ModelEdit("body_mass", cube, np.array([0.08, 50.0])))
    h.step(h.get_state().ctrl)
    assert h._batch is None


_TREE = """
<mujoco>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint type="hinge" axis="0 1 0"/><geom size=".05"/>
      <body name="b" pos=".3 0 0"><joint type="hinge" axis="0 0 1"/><geom size=".05"/>
        <site name="on_b" pos=".1 .02 0"/></body>
      <body name="d" pos="0 .3 0"><joint type="slide" axis="1 0 0"/><geom size=".05"/>
        <site name="on_d" pos="0 .1 .05"/></body>
    </body>
    <body name="c" pos="1 0 1"><joint type="ball"/><geom size=".05"/></body>
    <body name="e" pos="0 0 2"><geom size=".05"/><site name="fixed" pos=".1 0 0"/></body>
  </worldbody>
</mujoco>
"""


@pytest.mark.parametrize("site", ["on_b", "on_d", "fixed"])
def test_site_jacobian_is_mj_jacsite_bitwise(site):
    # on_b: a chain of adjacent dofs; on_d: dofs 3 and 0 (b's and c's between them); fixed:
    # a body with no dof (all zeros)
    import mujoco

    from metasim.sim.mujoco.batched import site_jacobian

    m = mujoco.MjModel.from_xml_string(_TREE)
    d = mujoco.MjData(m)
    sid = m.site(site).id
    rng = np.random.default_rng(0)
    b = 6
    cdof, com = np.zeros((b, m.nv, 6)), np.zeros((b, m.nbody, 3))
    pos, want = np.zeros((b, m.nsite, 3)), np.zeros((b, 6, m.nv))
    for i in range(b):
        d.qpos[:] = rng.normal(size=m.nq)
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        cdof[i], com[i], pos[i] = d.cdof, d.subtree_com, d.site_xpos
        mujoco.mj_jacSite(m, d, want[i, :3], want[i, 3:], sid)
    got = np.zeros((b, 6, m.nv))
    site_jacobian(m, sid, pos)(cdof, com, got)
    np.testing.assert_array_equal(got, want)
    assert got.any() == (site != "fixed")
