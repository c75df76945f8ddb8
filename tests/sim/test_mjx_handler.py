"""The MJX backend against native MuJoCo: parity over 200 control steps with stated
tolerances, exact state round trips, subset resets, per-env model edits, and clear
errors for scenes MJX cannot simulate.

One MJX handler (lift_cube, 2 envs) is compiled for the whole module: an XLA compile of
the scene takes about a minute on a 2-core CPU the first time, seconds once JAX's
persistent cache (~/.cache/metasim/jax) holds it. Every built-in scene's parity is in the
sweep lane (`-m sweep`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("jax", reason="the mjx extra (jax, mujoco-mjx) is not installed")

from metasim.paths import SCENES
from metasim.scene import compile_file
from metasim.sim import ModelEdit, UnsupportedScene, get_backend
from metasim.tasks.task import TaskRuntime

# The module compiles lift_cube for MJX (~1 min cold, ~30 s warm): the slow lane.
pytestmark = pytest.mark.slow

# Tolerances of the parity test (MJX's Newton solver and collision routines differ from
# native MuJoCo's in detail; errors stay far below what a task predicate can notice).
JOINT_ATOL = 1e-3  # rad (or m for the finger slides), every joint, every step
OBJECT_ATOL = 1e-4  # m, object body positions, every step
PARITY_STEPS = 200

# Built-in scenes MJX cannot run, and why (see metasim.sim.mjx.support.unsupported).
NOT_MJX_READY: dict[str, str] = {}

# Built-in scenes MJX runs with a collision stand-in (metasim.sim.mjx.support). They are
# held to the same tolerances: the parity run's contacts are the object resting on (or
# dropped onto) the table, where a prism's flat cap and the cylinder's agree (measured
# on lift_cylinder with the can dropped 3 cm: worst object error 4e-6 m). Finger
# contacts differ (flat prism sides against a round can, radius within 1.3%); the
# expert's success on MJX covers them (tests/sim/test_mjx_cylinder.py).
STAND_INS = {"lift_cylinder": "the can is a cylinder on the box table: a 16-sided prism"}


def _initial(compiled: Any, handler: Any, n: int) -> Any:
    task = TaskRuntime(compiled)
    return task.sample_initial(handler.default_state(n), list(range(n)))


def _ctrl_sequence(compiled: Any, state: Any, steps: int) -> np.ndarray:
    """(steps, B, nu): smooth arm motions around the start pose; the gripper closes halfway.

    Offsets stay small so that no actuator saturates (MJX's implicit integrator keeps
    the damping derivative of a force-clamped actuator, native MuJoCo drops it)."""
    idx = compiled.index
    t = np.arange(steps)[:, None, None]
    phase = np.arange(len(idx.arm_act))[None, None, :]
    ctrl = np.repeat(state.ctrl[None], steps, axis=0)
    ctrl[:, :, idx.arm_act] += 0.04 * (np.sin(0.05 * t + phase) - np.sin(phase))
    if idx.gripper_act >= 0:
        ctrl[steps // 2 :, :, idx.gripper_act] = 0.0
    return ctrl


def _compare(mjx_h: Any, native: Any, compiled: Any, ctrl: np.ndarray) -> tuple[float, float]:
    """Step both with `ctrl`; the worst joint and object errors over all steps."""
    obj = compiled.index.object_body
    joint_err = obj_err = 0.0
    for c in ctrl:
        mjx_h.step(c)
        native.step(c)
        a, b = mjx_h.kinematics(), native.kinematics()
        joint_err = max(joint_err, float(np.abs(a.qpos - b.qpos).max()))
        obj_err = max(
            obj_err, float(np.abs(a.body_pos[:, obj] - b.body_pos[:, obj]).max(initial=0))
        )
    return joint_err, obj_err


@pytest.fixture(scope="module")
def mjx_lift(lift_scene: Any) -> Any:
    handler = get_backend("mjx").launch(lift_scene, 2)
    yield handler
    handler.close()


def test_parity_with_native_over_200_steps(lift_scene: Any, mjx_lift: Any) -> None:
    native = get_backend("mujoco").launch(lift_scene, 2, nthread=1)
    state = _initial(lift_scene, native, 2)
    q = int(lift_scene.index.object_qpos[0])
    state.qpos[:, q + 2] += 0.03  # drop the cube 3 cm onto the table: box-box contact
    native.set_state(state)
    mjx_lift.set_state(state)
    np.testing.assert_allclose(
        mjx_lift.kinematics().body_pos, native.kinematics().body_pos, atol=1e-12
    )
    ctrl = _ctrl_sequence(lift_scene, state, PARITY_STEPS)
    joint_err, obj_err = _compare(mjx_lift, native, lift_scene, ctrl)
    print(f"lift_cube: worst joint error {joint_err:.1e}, worst object error {obj_err:.1e}")
    assert joint_err < JOINT_ATOL, joint_err
    assert obj_err < OBJECT_ATOL, obj_err
    site = lift_scene.index.ee_site
    np.testing.assert_allclose(
        mjx_lift.site_jacobian(site), native.site_jacobian(site), atol=JOINT_ATOL
    )
    np.testing.assert_allclose(
        mjx_lift.kinematics().site_mat, native.kinematics().site_mat, atol=JOINT_ATOL
    )
    native.close()


def test_state_round_trip_is_exact(lift_scene: Any, mjx_lift: Any) -> None:
    mjx_lift.set_state(_initial(lift_scene, mjx_lift, 2))
    for _ in range(3):
        mjx_lift.step(mjx_lift.get_state().ctrl)
    s1 = mjx_lift.get_state()
    kin1 = mjx_lift.kinematics().body_pos.copy()
    mjx_lift.set_state(s1)
    assert s1.allclose(mjx_lift.get_state(), atol=0.0)
    np.testing.assert_array_equal(mjx_lift.kinematics().body_pos, kin1)
    mjx_lift.step(s1.ctrl)
    after = mjx_lift.get_state()
    mjx_lift.set_state(s1)
    mjx_lift.step(s1.ctrl)
    assert after.allclose(mjx_lift.get_state(), atol=0.0)


def test_subset_reset_leaves_other_envs(lift_scene: Any, mjx_lift: Any) -> None:
    start = _initial(lift_scene, mjx_lift, 2)
    mjx_lift.set_state(start)
    for _ in range(3):
        mjx_lift.step(start.ctrl)
    before = mjx_lift.get_state()
    mjx_lift.reset([1], start.take([1]))
    after = mjx_lift.get_state()
    assert after.take([0]).allclose(before.take([0]), atol=0.0)
    assert after.take([1]).allclose(start.take([1]), atol=0.0)
    with pytest.raises(ValueError, match="env ids"):
        mjx_lift.reset([0, 1], start.take([1]))


def test_per_env_model_edit_changes_only_that_env(lift_scene: Any, mjx_lift: Any) -> None:
    idx = lift_scene.index
    dof, qadr, act = int(idx.arm_dof[0]), int(idx.arm_qpos[0]), int(idx.arm_act[0])
    damping = mjx_lift.model_field("dof_damping")[:, dof].copy()
    heavy = damping.copy()
    heavy[1] = 2000.0  # N m s/rad: at the 87 N m force limit the joint creeps at 0.04 rad/s
    both = _initial(lift_scene, mjx_lift, 1).take([0, 0])
    try:
        mjx_lift.apply(ModelEdit("dof_damping", dof, heavy))
        mjx_lift.set_state(both)
        ctrl = both.ctrl.copy()
        ctrl[:, act] += 0.3
        for _ in range(3):
            mjx_lift.step(ctrl)
        moved = mjx_lift.kinematics().qpos[:, qadr] - both.qpos[:, qadr]
        assert moved[0] > 0.1  # the free joint gets most of the way in 0.15 s
        assert moved[1] < 0.02  # the damped one creeps
    finally:
        mjx_lift.apply(ModelEdit("dof_damping", dof, damping))
    np.testing.assert_array_equal(mjx_lift.model_field("dof_damping")[:, dof], damping)
    with pytest.raises(ValueError, match="perturbs only"):
        mjx_lift.apply(ModelEdit("geom_margin", 0, np.zeros(2)))


def test_per_env_gravity(lift_scene: Any, mjx_lift: Any) -> None:
    cube = int(lift_scene.index.object_qpos[0])
    held = _initial(lift_scene, mjx_lift, 1).take([0, 0])
    held.qpos[:, cube + 2] += 0.05  # 5 cm above the table
    normal = mjx_lift.model_field("gravity").copy()
    try:
        mjx_lift.apply(ModelEdit("gravity", 0, np.array([[0, 0, -9.81], [0, 0, 0.0]])))
        mjx_lift.set_state(held)
        for _ in range(3):
            mjx_lift.step(held.ctrl)
        z = mjx_lift.get_state().qpos[:, cube + 2]
        assert z[0] < held.qpos[0, cube + 2] - 0.03  # fell
        assert abs(z[1] - held.qpos[1, cube + 2]) < 1e-6  # floats
    finally:
        mjx_lift.apply(ModelEdit("gravity", 0, normal))


def test_render_matches_native(lift_scene: Any, mjx_lift: Any) -> None:
    native = get_backend("mujoco").launch(lift_scene, 2, nthread=1)
    state = _initial(lift_scene, native, 2)
    native.set_state(state)
    mjx_lift.set_state(state)
    img = mjx_lift.render("front", [1], width=64, height=48)
    assert img.shape == (1, 48, 64, 3)
    np.testing.assert_array_equal(img, native.render("front", [1], width=64, height=48))
    native.close()


def test_kinematics_dlpack_shares_jax_memory(lift_scene: Any, mjx_lift: Any) -> None:
    """Zero-copy hand-off to torch: the tensors alias the JAX arrays of the last step."""
    torch = pytest.importorskip("torch")
    start = _initial(lift_scene, mjx_lift, 2)
    mjx_lift.set_state(start)
    mjx_lift.step(start.ctrl)
    tensors = mjx_lift.kinematics_dlpack()
    qpos_dev = mjx_lift._obs_dev[0]
    assert tensors["qpos"].data_ptr() == qpos_dev.unsafe_buffer_pointer()  # no copy
    assert tensors["qpos"].dtype == torch.float64
    kin = mjx_lift.kinematics()
    for name in ("qpos", "qvel", "body_pos", "body_quat", "site_pos", "site_mat"):
        np.testing.assert_array_equal(tensors[name].numpy(), getattr(kin, name))
    site = lift_scene.index.ee_site
    np.testing.assert_array_equal(tensors["ee_jacobian"].numpy(), mjx_lift.site_jacobian(site))
    before = tensors["qpos"].clone()
    mjx_lift.step(start.ctrl)  # a new step makes new arrays; the old tensors stay valid
    torch.testing.assert_close(tensors["qpos"], before, rtol=0, atol=0)


def test_unsupported_scene_names_feature_and_element() -> None:
    from metasim.sim.mjx.support import put_model

    compiled = compile_file(str(SCENES / "lift_cylinder.yaml"))
    with pytest.raises(ValueError, match=r"geom can \(cylinder, body can\) against geom table"):
        put_model(compiled, cylinder_sides=0)  # without its prism stand-in


def test_a_scene_observed_inside_the_step_is_refused(lift_scene: Any) -> None:
    """MJX observes only at a control step's end: a scene with `task.observe_substep`
    (LIBERO's) is refused when the handler is built, naming the field."""
    with pytest.raises(UnsupportedScene, match=r"task\.observe_substep"):
        get_backend("mjx").launch(lift_scene.observed_at(3), 1)


def test_bench_backend_reports_both_backends(lift_scene: Any) -> None:
    """The layout `metasim bench physics --backend mjx` prints (run here with the native
    backend on both sides: the MJX compile is what the handler tests above pay for)."""
    from metasim.bench.physics import bench_backend

    out = bench_backend(lift_scene, 2, steps=3, backend="mujoco", repeats=1)
    assert out["mujoco"]["physics_steps_per_s"] > 0
    assert out["mujoco"]["launch_and_compile_s"] >= 0
    assert out["ratio"] > 0


@pytest.mark.sweep
@pytest.mark.parametrize("name", sorted(p.stem for p in SCENES.glob("*.yaml")))
def test_every_builtin_scene_parity(name: str) -> None:
    compiled = compile_file(str(SCENES / f"{name}.yaml"))
    if name in NOT_MJX_READY:
        # Not MJX-ready (NOT_MJX_READY says why): the backend must refuse it clearly.
        with pytest.raises(ValueError, match="cannot run on MJX"):
            get_backend("mjx").launch(compiled, 2)
        return
    native = get_backend("mujoco").launch(compiled, 2, nthread=1)
    handler: Any = get_backend("mjx").launch(compiled, 2)
    assert bool(handler.stand_ins) == (name in STAND_INS), handler.stand_ins
    state = _initial(compiled, native, 2)
    if name in STAND_INS:  # drop the objects 3 cm onto the table, as lift_cube's test does
        for q in compiled.index.object_qpos:
            state.qpos[:, int(q) + 2] += 0.03
    native.set_state(state)
    handler.set_state(state)
    ctrl = _ctrl_sequence(compiled, state, PARITY_STEPS)
    joint_err, obj_err = _compare(handler, native, compiled, ctrl)
    print(f"{name}: worst joint error {joint_err:.1e}, worst object error {obj_err:.1e}")
    assert joint_err < JOINT_ATOL, joint_err
    assert obj_err < OBJECT_ATOL, obj_err


def test_eval_on_an_unsupported_scene_exits_2(tmp_path: Any, capsys: Any) -> None:
    """lift_cube with an ellipsoid on the table: MJX has no ellipsoid-box collision."""
    from metasim.cli.main import main

    (tmp_path / "egg.xml").write_text(
        '<mujoco><worldbody><body name="egg"><geom type="ellipsoid" size="0.02 0.02 0.03" '
        'mass="0.05"/></body></worldbody></mujoco>'
    )
    scene = (
        (SCENES / "lift_cube.yaml")
        .read_text()
        .replace(
            "cameras:",
            "  - {name: egg, shape: mjcf, mjcf: egg.xml, pos: [0.4, 0.1, 0.03]}\ncameras:",
        )
    )
    (tmp_path / "egg_scene.yaml").write_text(scene)
    args = ["eval", "--quiet", "backend=mjx", f"suite.tasks=[{tmp_path / 'egg_scene.yaml'}]"]
    assert main([*args, "episodes=2", f"out={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err
    assert "cannot run on MJX" in err and "ellipsoid" in err and "Traceback" not in err


def test_step_kinematics_match_native(lift_scene: Any, mjx_lift: Any) -> None:
    """What success predicates read (`kinematics(at="step")`: the poses the last substep
    computed, of the state before its integration) agrees with native MuJoCo's, and is
    not the post-step kinematics."""
    native = get_backend("mujoco").launch(lift_scene, 2, nthread=1)
    state = _initial(lift_scene, native, 2)
    state.qpos[:, int(lift_scene.index.object_qpos[0]) + 2] += 0.03  # the cube falls
    native.set_state(state)
    mjx_lift.set_state(state)
    native.step(state.ctrl)
    mjx_lift.step(state.ctrl)
    a, b = mjx_lift.kinematics(at="step"), native.kinematics(at="step")
    np.testing.assert_allclose(a.body_pos, b.body_pos, atol=1e-9)
    np.testing.assert_allclose(a.site_mat, b.site_mat, atol=1e-9)
    np.testing.assert_allclose(a.qpos, mjx_lift.kinematics().qpos, atol=0)
    moved = np.abs(mjx_lift.kinematics().body_pos - a.body_pos).max()
    assert moved > 1e-5, moved  # the falling cube moved during the last substep
    native.close()
