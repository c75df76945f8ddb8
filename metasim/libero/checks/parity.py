"""Parity of an imported LIBERO task against the reference simulator (LIBERO itself:
robosuite 1.4 on MuJoCo 3.17, `metasim.libero.reference.simulator.ReferenceSim`).

One run, (suite, task, init k, steps N, seed R):

- reference: `env.seed(R); env.reset(); env.set_init_state(init[k])`, the first
  `agentview` frame, then N seeded smooth random `osc_pose` actions (`smooth_actions`).
- metasim: the task imported with `load_task` and compiled with MuJoCo 4; the fixtures put
  where the reference's reset placed them (LIBERO samples fixture placements at every reset
  and the init states do not record them); init state k applied with `init_state_map`;
  `osc_pose` started as LIBERO starts it (built at the robot's reset pose, stale first
  substep: `OscPose.reset(stale=True)`); the same actions on a plain MjData.

Measured per step: the end-effector (grip site) position error, each object's position
error, the gripper error (the two finger joints), and once, the PSNR of metasim's first
`agentview` frame (256², `mujoco.Renderer`, the scene's LIBERO `render` settings) against
the reference's;
also the first step at which the robot hits something (`contacts.robot_hit`), where the
two simulators' trajectories may part.

An object is **touched** when, at any physics substep of metasim's run, it is in contact
with the robot or with a moving body that is touched (a chain of contacts from the robot:
arm -> bowl -> plate marks both). Moving bodies are MuJoCo weld groups with a joint
(objects, drawers, doors, the robot's links); the world and static fixture parts never pass
a touch on. Untouched objects should stay where the reference has them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from metasim.control.osc import OscIndex, OscPose, arm_at
from metasim.libero.checks.contacts import object_touched, robot_hit, spread_touch
from metasim.libero.checks.frames import CAMERA, SIZE, render_first_frame, upright
from metasim.libero.importer import paths
from metasim.libero.importer.init_states import InitStateMap, init_state_map
from metasim.libero.importer.scene import LiberoTask, load_task
from metasim.libero.reference.simulator import ReferenceSim
from metasim.reference import images
from metasim.reference import parity as kit
from metasim.scene.compile import ROBOT_PREFIX, CompiledScene, compile_scene

SITE = "gripper0_grip_site"
ARM_JOINTS = tuple(f"robot0_joint{i}" for i in range(1, 8))
FINGER_JOINTS = ("gripper0_finger_joint1", "gripper0_finger_joint2")
GRIPPER_ACTUATORS = ("gripper0_gripper_finger_joint1", "gripper0_gripper_finger_joint2")
# Targets (docs/libero.md): end effector and untouched objects within 1 mm, PSNR >= 30 dB.
EEF_TARGET_M = 1e-3
OBJECT_TARGET_M = 1e-3
PSNR_TARGET_DB = 30.0


def smooth_actions(steps: int, seed: int = 0) -> np.ndarray:
    """(steps, 7) low-pass filtered random osc_pose actions in [-1, 1] (the first is zero);
    the gripper input is -1 (open) for 25 steps, then +1 (close) for 25, and so on (the
    parity kit's actions on osc_pose's box, as the backend parity check drives it)."""
    box = np.ones(7)
    return kit.smooth_actions(-box, box, steps, seed, gripper_block=kit.GRIPPER_BLOCK)


@dataclass
class ParityResult:
    """One parity run. Per-step arrays have T = steps rows, in metres: `eef` (T,),
    `gripper` (T,) (worst finger), `objects[name]` (T,); `touched[name]` as defined in the
    module doc; `psnr_db` of the first agentview frame; the frames (256, 256, 3) uint8
    upright; `init_body` the largest body position difference right after the init state
    (robot, objects and fixtures, m), a check that both start from the same state;
    `contact_step` the first control step (1-based) in which the robot hit something in
    metasim's run (`contacts.robot_hit`: another body, itself, an arm joint limit; 0:
    never), `contact_kind` what it hit first: the trajectories may part from there on;
    `ref_moved[name]` how far (m) each object got from its initial position in the
    reference (an untouched object that moves was not at rest)."""

    suite: str
    task: int
    name: str
    init: int
    steps: int
    seed: int
    eef: np.ndarray
    gripper: np.ndarray
    objects: dict[str, np.ndarray]
    touched: dict[str, bool]
    psnr_db: float
    init_body: float
    contact_step: int = 0
    contact_kind: str = ""
    ref_moved: dict[str, float] = field(default_factory=dict)
    frames: dict[str, np.ndarray] = field(repr=False, default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def free_steps(self) -> int:
        """Steps before the robot first hit something (all of them when it never did)."""
        return kit.free_steps(self.contact_step, self.steps)

    @property
    def untouched(self) -> list[str]:
        return kit.untouched(self.touched)

    def object_max(self, names: list[str] | None = None) -> np.ndarray:
        """(T,) the worst error over `names` (default all objects); zeros without any."""
        return kit.worst(self.objects, names, self.steps)

    def misses(self) -> list[str]:
        """The targets this run misses (empty when it meets all three)."""
        out = []
        if self.eef.max() > EEF_TARGET_M:
            out.append("eef")
        if self.object_max(self.untouched).max() > OBJECT_TARGET_M:
            out.append("untouched_objects")
        if self.psnr_db < PSNR_TARGET_DB:
            out.append("psnr")
        return out

    def summary(self) -> dict[str, Any]:
        """JSON-able summary (millimetres, dB, seconds); per-step lists have T entries."""
        mm = lambda a: [round(float(v) * 1e3, 6) for v in a]  # noqa: E731
        untouched = self.object_max(self.untouched)
        return {
            "suite": self.suite,
            "task": self.task,
            "name": self.name,
            "init": self.init,
            "steps": self.steps,
            "seed": self.seed,
            "eef_max_mm": mm([self.eef.max()])[0],
            "eef_median_mm": mm([np.median(self.eef)])[0],
            "gripper_max_mm": mm([self.gripper.max()])[0],
            "object_max_mm": mm([self.object_max().max()])[0],
            "untouched_object_max_mm": mm([untouched.max()])[0],
            "psnr_db": round(self.psnr_db, 3),
            "init_body_mm": mm([self.init_body])[0],
            "contact_step": self.contact_step,
            "contact_kind": self.contact_kind,
            "eef_before_contact_max_mm": mm([kit.before_contact(self.eef, self.free_steps)])[0],
            "misses": self.misses(),
            "objects": {
                n: {
                    "max_mm": mm([e.max()])[0],
                    "touched": self.touched[n],
                    "ref_moved_mm": mm([self.ref_moved.get(n, 0.0)])[0],
                }
                for n, e in self.objects.items()
            },
            "per_step": {
                "eef_mm": mm(self.eef),
                "gripper_mm": mm(self.gripper),
                "object_mm": mm(self.object_max()),
                "untouched_object_mm": mm(untouched),
            },
            "seconds": {k: round(v, 2) for k, v in self.seconds.items()},
        }


@dataclass
class MetasimTask:
    """A compiled task (rendering as LIBERO's, from the scene) and the ids a parity run needs."""

    task: LiberoTask
    compiled: CompiledScene
    mapping: InitStateMap
    index: OscIndex
    fingers: np.ndarray  # (2,) qpos addresses
    weld_of_robot: np.ndarray  # weld ids of the robot's bodies
    robot_geom: np.ndarray  # (ngeom,) bool: the geom belongs to the robot
    finger_geom: np.ndarray  # (ngeom,) bool: ... to one of its fingers
    arm_joints: np.ndarray  # (7,) joint ids


def prepare(suite: str, task: int) -> MetasimTask:
    """Import and compile a task for parity runs (fixtures still at their region centres)."""
    imported = load_task(f"libero:{suite}/{task}")
    compiled = compile_scene(imported.scene)
    model = compiled.model
    p = ROBOT_PREFIX
    index = OscIndex.from_model(
        model, p + SITE, [p + j for j in ARM_JOINTS], [p + a for a in GRIPPER_ACTUATORS]
    )
    fingers = np.array([model.joint(p + j).qposadr[0] for j in FINGER_JOINTS])
    robot = [b for b in range(model.nbody) if model.body(b).name.startswith(p)]
    welds = np.unique(model.body_weldid[robot])
    robot_geom = np.isin(model.geom_bodyid, robot)
    finger = [b for b in robot if "finger" in model.body(b).name]
    arm = np.array([model.joint(p + j).id for j in ARM_JOINTS])
    mapping = init_state_map(imported.problem, compiled)
    return MetasimTask(
        imported, compiled, mapping, index, fingers, welds, robot_geom,
        np.isin(model.geom_bodyid, finger), arm,
    )  # fmt: skip


def _ref_body(name: str, roots: dict[str, str]) -> str:
    """The reference model's name of a metasim body (robot prefix dropped, an object's or
    fixture's root named `<instance>_main`)."""
    return roots.get(name, name.removeprefix(ROBOT_PREFIX))


def place_fixtures(
    model: mujoco.MjModel, fixtures: dict[str, str], bodies: list[str], state: dict[str, Any]
) -> None:
    """Put each fixture's root body (metasim body `<instance>`, a child of the world) at the
    reference's pose of its root body (`fixtures`: instance -> reference body name;
    `state`: the reference's body_xpos (nbody, 3) and body_xquat (nbody, 4))."""
    for inst, root in fixtures.items():
        i = bodies.index(root)
        b = model.body(inst).id
        model.body_pos[b] = state["body_xpos"][i]
        model.body_quat[b] = state["body_xquat"][i]


def _init_body_error(
    model: mujoco.MjModel, data: mujoco.MjData, roots: dict[str, str], state: dict[str, Any],
    bodies: list[str],
) -> float:  # fmt: skip
    """Largest position difference of the bodies both models name alike (m)."""
    where = {n: i for i, n in enumerate(bodies)}
    worst = 0.0
    for b in range(1, model.nbody):
        i = where.get(_ref_body(model.body(b).name, roots))
        if i is not None:
            worst = max(worst, float(np.abs(data.xpos[b] - state["body_xpos"][i]).max()))
    return worst


class ParityRunner:
    """Runs parity on tasks with one ReferenceSim (its worker is reused across tasks and
    inits; a task is loaded and compiled once)."""

    def __init__(self, ref: ReferenceSim) -> None:
        self.ref = ref
        self._loaded: tuple[str, int] | None = None
        self._info: dict[str, Any] = {}
        self._sim: MetasimTask | None = None

    def _load(self, suite: str, task: int) -> tuple[dict[str, Any], MetasimTask, dict[str, float]]:
        sec: dict[str, float] = {}
        if self._loaded != (suite, task) or self._sim is None:
            start = time.perf_counter()
            self._info = self.ref.load(suite, task, size=SIZE, cameras=True)
            sec["ref_load"] = time.perf_counter() - start
            start = time.perf_counter()
            self._sim = prepare(suite, task)
            sec["metasim_compile"] = time.perf_counter() - start
            self._loaded = (suite, task)
        return self._info, self._sim, sec

    def run(
        self, suite: str, task: int, init: int, steps: int = 100, seed: int = 0
    ) -> ParityResult:
        """One parity run (module doc). `seed` seeds the reference env's reset (fixture
        placement) and the action sequence."""
        info, sim, sec = self._load(suite, task)
        actions = smooth_actions(steps, seed)
        start = time.perf_counter()
        state, ctrl = self.ref.reset(init=init, seed=seed)
        ref_frame = upright(self.ref.render()[CAMERA])
        ref_steps = self.ref.step(actions)
        sec["reference"] = time.perf_counter() - start

        start = time.perf_counter()
        model = sim.compiled.model
        roots = {**info["objects"], **info["fixtures"]}
        place_fixtures(model, info["fixtures"], info["bodies"], state)
        data = mujoco.MjData(model)
        sim.mapping.apply(model, data, sim.task.init_states[init % len(sim.task.init_states)])
        init_body = _init_body_error(model, data, roots, state, info["bodies"])
        frame = render_first_frame(sim.compiled, data)
        osc = start_osc(sim, data, ctrl)
        track = step_metasim(sim, data, osc, actions, list(info["objects"]))
        sec["metasim"] = time.perf_counter() - start

        ref_rows = {n: info["bodies"].index(r) for n, r in info["objects"].items()}
        ref_obj = ref_steps["body_xpos"]
        objects = {
            n: np.linalg.norm(track["objects"][:, k] - ref_obj[:, ref_rows[n]], axis=1)
            for k, n in enumerate(info["objects"])
        }
        ref_moved = {
            n: float(np.linalg.norm(ref_obj[:, i] - state["body_xpos"][i], axis=1).max())
            for n, i in ref_rows.items()
        }
        return ParityResult(
            suite=suite,
            task=task,
            name=sim.task.task,
            init=init,
            steps=steps,
            seed=seed,
            eef=np.linalg.norm(track["eef"] - ref_steps["eef_pos"], axis=1),
            gripper=np.abs(track["gripper"] - ref_steps["gripper_qpos"]).max(axis=1),
            objects=objects,
            touched=track["touched"],
            psnr_db=images.psnr(frame, ref_frame, cap=kit.PSNR_CAP),
            init_body=init_body,
            contact_step=track["contact_step"],
            contact_kind=track["contact_kind"],
            ref_moved=ref_moved,
            frames={"metasim": frame, "reference": ref_frame},
            seconds=sec,
        )


def start_osc(sim: MetasimTask, data: mujoco.MjData, ctrl: dict[str, Any]) -> OscPose:
    """osc_pose as LIBERO starts it on `data` (init state applied): built at the robot's
    reset pose, stale first substep, the gripper's kept command. `ctrl`: the controller
    dict of `ReferenceSim.reset` (robot_init_qpos (7,), gripper_init_qpos (2,),
    gripper_action (2,))."""
    model = sim.compiled.model
    reset_pose = data.qpos.copy()
    reset_pose[sim.index.arm_qpos] = ctrl["robot_init_qpos"]
    reset_pose[sim.fingers] = ctrl["gripper_init_qpos"]
    osc = OscPose(sim.index, 1)
    start = arm_at(model, sim.index, reset_pose[None])
    osc.reset([0], start, gripper=np.asarray(ctrl["gripper_action"])[None], stale=True)
    return osc


def step_metasim(
    sim: MetasimTask, data: mujoco.MjData, osc: OscPose, actions: np.ndarray, names: list[str]
) -> dict[str, Any]:
    """Step `actions` (T, 7) in metasim: per control step the eef (T, 3), fingers (T, 2)
    and the objects `names`' positions (T, n, 3); which of them were touched and when the
    robot first hit something (contacts checked at every substep)."""
    model = sim.compiled.model
    bodies = np.array([model.body(n).id for n in names], dtype=np.int64)
    touched = {int(w) for w in sim.weld_of_robot}
    weld = model.body_weldid[model.geom_bodyid]
    eef, grip, objs = [], [], []
    contact_step, contact_kind = 0, ""  # first control step (1-based) with a robot hit
    for t, action in enumerate(actions):
        osc.command(action[None])
        for k in range(sim.compiled.substeps):
            mujoco.mj_step1(model, data)
            spread_touch(weld, data, touched)
            hit = robot_hit(sim.robot_geom, sim.finger_geom, sim.arm_joints, data)
            if not contact_step and hit:
                contact_step, contact_kind = t + 1, hit
            osc.substep(0, k, model, data)
            mujoco.mj_step2(model, data)
        eef.append(data.site_xpos[sim.index.site].copy())
        grip.append(data.qpos[sim.fingers].copy())
        objs.append(data.xpos[bodies].copy())
    return {
        "eef": np.array(eef),
        "gripper": np.array(grip),
        "objects": np.array(objs),
        "touched": {n: object_touched(model, model.body(n).id, touched) for n in names},
        "contact_step": contact_step,
        "contact_kind": contact_kind,
    }


def check_args(suite: str, task: int, init: int, steps: int) -> None:
    """Input errors (metasim.errors.MetasimInputError) for a bad suite, task index, init
    state index or step count, before any simulator starts."""
    from metasim.errors import MetasimInputError

    if suite not in paths.LIBERO_SUITES:
        raise MetasimInputError(
            "--suite", [f"{suite!r} is not a LIBERO suite; one of {', '.join(paths.LIBERO_SUITES)}"]
        )
    count = len(paths.suite_tasks(suite))
    if not 0 <= task < count:
        raise MetasimInputError(
            "--task", [f"{task} is out of range: {suite} has tasks 0..{count - 1}"]
        )
    n_init = len(paths.load_init_states(suite, task))
    if not 0 <= init < n_init:
        raise MetasimInputError(
            "--init", [f"{init} is out of range: the task has init states 0..{n_init - 1}"]
        )
    if not 1 <= steps <= 1000:  # LIBERO's horizon; memory and time grow with the steps
        raise MetasimInputError(
            "--steps", [f"expected 1..1000 steps (LIBERO's episode horizon), got {steps}"]
        )


def run_parity(
    suite: str,
    task: int,
    init: int,
    steps: int = 100,
    seed: int = 0,
    ref: ReferenceSim | None = None,
) -> ParityResult:
    """One parity run (checks the arguments first; starts a ReferenceSim if none is given)."""
    check_args(suite, task, init, steps)
    if ref is not None:
        return ParityRunner(ref).run(suite, task, init, steps, seed)
    with ReferenceSim() as own:
        return ParityRunner(own).run(suite, task, init, steps, seed)
