"""`metasim libero parity` (metasim.libero.checks.parity) against the LIBERO reference simulator
(.cache/libero-ref, built on first use like tests/libero/test_reference.py; skipped only
when it cannot be built). The tasks run here were not used to tune the importer's render
settings (libero_goal 0 was)."""

from __future__ import annotations

import json
from pathlib import Path

import mujoco
import numpy as np
import pytest
from PIL import Image

from metasim.cli.main import main
from metasim.control.osc import step_osc
from metasim.libero.checks import contacts, parity
from metasim.libero.reference.simulator import ReferenceSim
from metasim.reference import images
from metasim.robosuite.importer import robot

# `metasim check CHECK --benchmark NAME`: the one spelling of a benchmark's checks.
PARITY_ARGV = ["check", "--benchmark", "libero", "parity"]


@pytest.mark.reference
def test_cli_json_meets_the_targets_on_a_floor_task(
    ref_python: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """libero_object task 4 (floor arena), init 7, 30 steps: the JSON summary's shape, the
    end effector within 1 mm, the first frame >= 30 dB, and the saved frames upright."""
    argv = [*PARITY_ARGV, "--suite", "libero_object", "--task", "4", "--init", "7"]
    assert main([*argv, "--steps", "30", "--seed", "3", "--json", "--frames", str(tmp_path)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["suite"], s["task"], s["init"], s["steps"], s["seed"]) == (
        "libero_object",
        4,
        7,
        30,
        3,
    )
    for key in ("eef_mm", "gripper_mm", "object_mm", "untouched_object_mm"):
        assert len(s["per_step"][key]) == 30
    assert set(s["objects"]) and all(
        set(o) == {"max_mm", "touched", "ref_moved_mm"} for o in s["objects"].values()
    )
    print(f"libero_object 4 init 7: eef {s['eef_max_mm']:.4f} mm, psnr {s['psnr_db']:.1f} dB")
    assert s["init_body_mm"] < 1e-3  # both start from the same state (fixtures included)
    assert s["eef_max_mm"] <= 1.0 and s["gripper_max_mm"] <= 1.0
    assert s["psnr_db"] >= 30.0
    ours = np.asarray(Image.open(tmp_path / "agentview_metasim.png"))
    theirs = np.asarray(Image.open(tmp_path / "agentview_reference.png"))
    # The reference frame is stored upright: any other orientation matches far worse.
    for turned in (theirs[::-1], theirs[:, ::-1], theirs[::-1, ::-1]):
        assert images.psnr(ours, turned) < s["psnr_db"] - 5.0


@pytest.mark.reference
@pytest.mark.slow
def test_kitchen_task_end_effector_and_first_frame(ref: ReferenceSim) -> None:
    """libero_90 task 12 (a kitchen scene), init 31, 30 steps, through the library."""
    result = parity.ParityRunner(ref).run("libero_90", 12, 31, steps=30, seed=5)
    print(f"libero_90 12 init 31: eef {result.eef.max() * 1e3:.4f} mm, {result.psnr_db:.1f} dB")
    assert result.eef.shape == (30,) and result.eef.max() <= parity.EEF_TARGET_M
    assert result.psnr_db >= parity.PSNR_TARGET_DB
    assert result.frames["metasim"].shape == (256, 256, 3)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--suite", "libero_nine", "--task", "0"], "--suite"),
        (["--suite", "libero_goal", "--task", "10"], "--task"),
        (["--suite", "libero_goal", "--task", "-1"], "--task"),
        (["--suite", "libero_goal", "--task", "0", "--init", "50"], "--init"),
        (["--suite", "libero_goal", "--task", "0", "--steps", "0"], "--steps"),
    ],
)
def test_bad_arguments_exit_2_with_one_paragraph(
    args: list[str], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*PARITY_ARGV, "--init", "0", *args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    # range errors are the CLI's bounded arguments ("argument --task: ..."), the rest the
    # parity checks' ("error: --suite: ...")
    named = err.startswith(f"error: {field}:") or f"argument {field}:" in err
    assert err.startswith("error: ") and named and "\n" not in err and "Traceback" not in err


def test_smooth_actions_are_seeded_and_bounded() -> None:
    a = parity.smooth_actions(60, seed=4)
    assert a.shape == (60, 7) and np.abs(a).max() <= 1.0 and not a[0, :6].any()
    assert np.array_equal(a, parity.smooth_actions(60, seed=4))
    assert not np.array_equal(a, parity.smooth_actions(60, seed=5))
    assert set(a[:25, 6]) == {-1.0} and set(a[25:50, 6]) == {1.0}


_CHAIN = """
<mujoco><worldbody>
  <geom name="ground" type="plane" size="2 2 .1"/>
  <body name="robot/arm" pos="0 0 .1"><joint type="slide" axis="1 0 0"/>
    <geom type="box" size=".05 .05 .05"/></body>
  <body name="a" pos=".1 0 .1"><freejoint/><geom type="box" size=".05 .05 .05"/></body>
  <body name="b" pos=".2 0 .1"><freejoint/><geom type="box" size=".05 .05 .05"/></body>
  <body name="c" pos=".6 0 .1"><freejoint/><geom type="box" size=".05 .05 .05"/></body>
</worldbody></mujoco>
"""


def test_a_touch_spreads_along_contacts_but_not_through_the_ground() -> None:
    """arm -> a -> b are touched; c only rests on the ground, which every body touches."""
    model = mujoco.MjModel.from_xml_string(_CHAIN)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    weld = model.body_weldid[model.geom_bodyid]
    touched = {int(model.body_weldid[model.body("robot/arm").id])}
    contacts.spread_touch(weld, data, touched)
    hit = {n for n in "abc" if contacts.object_touched(model, model.body(n).id, touched)}
    assert hit == {"a", "b"}
    robot_geom = np.isin(model.geom_bodyid, [model.body("robot/arm").id])
    no_fingers = np.zeros(model.ngeom, dtype=bool)
    arm_joint = np.array([0])
    assert contacts.robot_hit(robot_geom, no_fingers, np.array([], dtype=int), data) == "scene"
    data.qpos[model.joint(0).qposadr[0]] = -0.3  # the arm slides away from a
    mujoco.mj_forward(model, data)
    assert not contacts.robot_hit(robot_geom, no_fingers, arm_joint, data)
    model.jnt_limited[0], model.jnt_range[0] = True, (-0.2, 0.2)  # now past its limit
    mujoco.mj_forward(model, data)
    assert contacts.robot_hit(robot_geom, no_fingers, arm_joint, data) == "limit"


def test_substep_path_equals_step_osc() -> None:
    """The parity run steps osc_pose substep by substep (to see every substep's contacts);
    that is bit for bit what `step_osc` does."""
    sim = parity.prepare("libero_spatial", 7)
    model = sim.compiled.model
    row = sim.task.init_states[0]
    ctrl = {
        "robot_init_qpos": np.array(robot.INIT_QPOS),
        "gripper_init_qpos": np.array([0.020833, -0.020833]),
        "gripper_action": np.zeros(2),
    }
    actions = parity.smooth_actions(4, seed=1)
    runs = []
    for _ in range(2):
        data = mujoco.MjData(model)
        sim.mapping.apply(model, data, row)
        runs.append((data, parity.start_osc(sim, data, ctrl)))
    track = parity.step_metasim(sim, runs[0][0], runs[0][1], actions, [])
    for a in actions:
        step_osc(model, [runs[1][0]], runs[1][1], a[None], substeps=sim.compiled.substeps)
    assert np.array_equal(track["eef"][-1], runs[1][0].site_xpos[sim.index.site])
    assert np.array_equal(runs[0][0].qpos, runs[1][0].qpos)
