"""Success agreement between metasim and LIBERO (`metasim check xcheck --benchmark libero`).

Does a policy's metasim success mean a LIBERO success? For each requested (task, init):

1. metasim runs the policy closed-loop (`run_task`, the eval path) and records, through
   the rollout's documented hooks (`on_start`, `on_applied`), what the reference needs to
   reproduce the episode: the start state (qpos, qvel in LIBERO's joint layout, after
   metasim's reset), the fixture root bodies' world poses actually used, and every
   action the simulator applied, the settle steps included; with them the end effector
   and the goal objects' positions after every step.
2. the reference (LIBERO on MuJoCo 3.17) starts from the same reset: `env.reset()`,
   `set_init_state(init k)`, the fixtures moved to metasim's poses, the state set to
   metasim's start state; it then replays the actions open-loop, and, when the goal does
   not hold at their end, up to `release` more steps of [0]*6 + [-1] (the hand opens).
3. per episode: both outcomes, the first success step on each side, the end-effector and
   goal-object distance between the two runs (max, at the end, the step where they part)
   and, for a disagreement, its cause (`classify`); per task: both success rates and a
   PAIRED 95% interval on their difference (`metasim.stats.paired`).

Episodes are appended to `<out>/xcheck.jsonl` as they finish; a rerun into the same
folder skips the ones held (resumable). Closed-loop runs in the reference are in
`metasim.libero.checks.xcheck_run`.

A pair is metasim's episode k (init state k, seed `episode_seed(seed, k)`, the fixture
poses drawn from that seed) and LIBERO started from metasim's reset of it: the same
physics from the same start. With `fixture_draw` (a harness, `openpi`), metasim's episode
k takes the fixture poses of that harness's episode k (`metasim.libero.harness_draw`), so
a pair starts where the harness's episode k starts; without it, the harness's placement
sampler would have put the fixtures elsewhere in their regions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.errors import MetasimInputError
from metasim.evaluate.hooks import Hooks
from metasim.evaluate.rollout import run_task
from metasim.evaluate.run_files import read_records
from metasim.evaluate.spec import RolloutSpec
from metasim.libero.importer import assets
from metasim.libero.importer.init_states import InitStateMap, init_state_map
from metasim.libero.importer.scene import SETTLE_STEPS, LiberoTask, load_task
from metasim.libero.reference.simulator import ReferenceSim
from metasim.scene.compile import CompiledScene, compile_scene

RELEASE_STEPS = 20  # steps of [0]*6 + [-1] the reference may take after the actions
PART_M = 0.01  # the two runs have parted once the eef or a goal object is 1 cm apart
MOVED_M = 0.01  # an object "moved" once it left its start by 1 cm
LIFT_M = 0.02  # ... was lifted once it rose 2 cm
LATE_STEPS = 2  # LIBERO's goal holding this few steps after the actions: a timing offset


@dataclass
class MetasimEpisode:
    """One metasim episode as the reference needs it. Shapes: actions (T, 7) applied
    (settle steps first), qpos (nq_L,) / qvel (nv_L,) the start state in LIBERO's joint
    layout, fixtures {instance: (7,) world pos + quat wxyz}, eef (T, 3) and
    objects {goal object: (T, 3)} after each step."""

    suite: str
    task: int
    init: int
    seed: int
    success: bool
    steps: int
    error: str | None
    actions: np.ndarray
    qpos: np.ndarray
    qvel: np.ndarray
    fixtures: dict[str, np.ndarray]
    eef: np.ndarray
    objects: dict[str, np.ndarray]

    @property
    def success_step(self) -> int | None:
        """1-based env step (settle steps counted) at which the goal first held."""
        return self.steps if self.success else None


def goal_objects(task: LiberoTask) -> list[str]:
    """The movable objects the goal names, in goal order (the first is the one moved)."""
    objects = {n for names in task.problem.objects.values() for n in names}
    out: list[str] = []
    for atom in task.problem.goal_atoms():
        out += [a for a in atom[1:] if a in objects and a not in out]
    return out


def fixture_instances(task: LiberoTask) -> list[str]:
    """The task's fixtures with a root body of their own (workspaces excluded)."""
    return [inst for inst, _, is_object in assets.models_of(task.problem) if not is_object]


class Recorder(Hooks):
    """Collects `MetasimEpisode`s from `run_task`'s hooks (`on_env`, `on_start`,
    `on_applied`): one growing trace per env slot."""

    def __init__(self, task: LiberoTask, compiled: CompiledScene, mapping: InitStateMap) -> None:
        self.task, self.compiled, self.mapping = task, compiled, mapping
        self.env: MetasimVectorEnv | None = None
        model = compiled.model
        self.objects = goal_objects(task)
        self.object_ids = np.array([model.body(n).id for n in self.objects], dtype=np.int64)
        self.fixtures = {n: model.body(n).id for n in fixture_instances(task)}
        self.traces: dict[int, dict[str, Any]] = {}  # episode -> trace

    def on_env(self, env: MetasimVectorEnv) -> None:
        self.env = env

    def on_start(self, slots: np.ndarray, episodes: np.ndarray) -> None:
        assert self.env is not None
        kin = self.env.handler.kinematics()
        for slot, k in zip(slots, episodes, strict=True):
            s = int(slot)
            self.traces[int(k)] = {
                "qpos": kin.qpos[s, self.mapping.qpos_index].copy(),
                "qvel": kin.qvel[s, self.mapping.qvel_index].copy(),
                "fixtures": {
                    n: np.concatenate([kin.body_pos[s, b], kin.body_quat[s, b]])
                    for n, b in self.fixtures.items()
                },
                "actions": [],
                "eef": [],
                "objects": [],
            }

    def on_applied(self, episodes: np.ndarray, actions: np.ndarray) -> None:
        assert self.env is not None
        kin = self.env.handler.kinematics()
        site = self.compiled.index.ee_site
        for slot in np.flatnonzero(episodes >= 0):
            trace = self.traces[int(episodes[slot])]
            trace["actions"].append(actions[slot].copy())
            trace["eef"].append(kin.site_pos[slot, site].copy())
            trace["objects"].append(kin.body_pos[slot, self.object_ids].copy())

    def episode(self, suite: str, rec: Any) -> MetasimEpisode:
        """The finished episode of record `rec` (an `EpisodeRecord`)."""
        t = self.traces.pop(rec.episode)
        objs = np.array(t["objects"]).reshape(-1, len(self.objects), 3)
        return MetasimEpisode(
            suite=suite, task=self.task.index, init=rec.episode % len(self.task.init_states),
            seed=rec.seed, success=rec.success, steps=rec.steps, error=rec.error,
            actions=np.array(t["actions"]).reshape(-1, 7), qpos=t["qpos"], qvel=t["qvel"],
            fixtures=t["fixtures"], eef=np.array(t["eef"]).reshape(-1, 3),
            objects={n: objs[:, i] for i, n in enumerate(self.objects)},
        )  # fmt: skip


def run_metasim(
    suite: str, task: int, inits: list[int], spec: RolloutSpec, fixture_draw: str | None = None
) -> Iterator[MetasimEpisode]:
    """Run `spec`'s policy in metasim on init states `inits` of the task (episode k starts
    from init state k, as in `metasim eval`; with `fixture_draw`, its fixtures where that
    harness's episode k has them), yielding each recorded episode."""
    imported = load_task(f"libero:{suite}/{task}", fixture_draw=fixture_draw)
    compiled = compile_scene(imported.scene)
    rec = Recorder(imported, compiled, init_state_map(imported.problem, compiled))
    for record in run_task(compiled, spec, inits, hooks=rec):
        yield rec.episode(suite, record)


@dataclass
class Replay:
    """The reference's run of a metasim episode. Shapes: eef (T, 3), objects
    {goal object: (T, 3)} (T = the actions replayed), success (T,), and the release
    steps taken after them (at most RELEASE_STEPS) with the step the goal then held."""

    eef: np.ndarray
    objects: dict[str, np.ndarray]
    success: np.ndarray
    start_objects: dict[str, np.ndarray]
    release_steps: int = 0
    release_success_step: int | None = None
    shadow_success: np.ndarray | None = None  # (T,) closed loop: metasim's check, same states
    error: str | None = None  # closed loop: why the policy stopped early (it raised)


def replay(ref: ReferenceSim, info: dict[str, Any], ep: MetasimEpisode, release: int) -> Replay:
    """Replay `ep` in the loaded reference task (`info` from `ReferenceSim.load`) from
    metasim's reset (module doc)."""
    if not len(ep.actions):  # the policy failed before the first step: nothing to replay
        none = {n: np.zeros((0, 3)) for n in ep.objects}
        return Replay(np.zeros((0, 3)), none, np.zeros(0, bool), none)
    ref.reset(init=ep.init, seed=0)
    roots = info["fixtures"]
    ref.place_fixtures({roots[n]: p for n, p in ep.fixtures.items() if n in roots})
    start = ref.set_state(ep.qpos, ep.qvel)
    rows = {n: info["bodies"].index(info["objects"][n]) for n in ep.objects}
    steps = ref.step(ep.actions)
    out = Replay(
        eef=steps["eef_pos"],
        objects={n: steps["body_xpos"][:, i] for n, i in rows.items()},
        success=np.asarray(steps["success"], dtype=bool),
        start_objects={n: start["body_xpos"][i] for n, i in rows.items()},
    )
    if not out.success.any() and release > 0:
        hold = np.tile([0.0, 0, 0, 0, 0, 0, -1.0], (release, 1))
        more = np.asarray(ref.step(hold)["success"], dtype=bool)
        out.release_steps = release
        out.release_success_step = int(np.argmax(more)) + 1 if more.any() else None
    return out


@dataclass
class Comparison:
    """One episode on both sides (JSON-able): outcomes, first success steps (1-based,
    settle steps counted; `reference_release_step`: the release step at which LIBERO's
    goal first held, when it did not within the actions), distances in metres between
    the two runs (end effector; the worst goal object) at their max and at the end,
    `part_step` the first step they were PART_M apart, and the disagreement's cause;
    `fixtures` the fixture root bodies' world poses both runs started with ((7,) pos +
    quat wxyz, by instance: metasim's episode's, or the harness's with `fixture_draw`).
    Closed loop only, `metasim_check_step`: the first step at which metasim's success
    predicate held on LIBERO's own state (the shadow env): the two goal checks compared on
    identical states."""

    suite: str
    task: int
    init: int
    seed: int
    steps: int
    metasim_success: bool
    reference_success: bool
    reference_success_with_release: bool
    metasim_success_step: int | None
    reference_success_step: int | None
    eef_max_m: float
    eef_end_m: float
    object_max_m: float
    object_end_m: float
    part_step: int | None
    cause: str
    error: str | None = None
    reference_release_step: int | None = None
    metasim_check_step: int | None = None
    mode: str = "replay"
    seconds: dict[str, float] = field(default_factory=dict)
    fixtures: dict[str, list[float]] = field(default_factory=dict)

    def key(self) -> tuple[str, int, int, str]:
        return (self.suite, self.task, self.init, self.mode)


def compare(ep: MetasimEpisode, rep: Replay) -> Comparison:
    """Both runs of one episode side by side (see `Comparison`)."""
    t = min(len(ep.eef), len(rep.eef))  # a closed-loop run may end earlier or later
    eef = np.linalg.norm(ep.eef[:t] - rep.eef[:t], axis=1)
    gaps = [np.linalg.norm(ep.objects[n][:t] - rep.objects[n][:t], axis=1) for n in ep.objects]
    obj = np.max(gaps, axis=0) if gaps else np.zeros(t)
    apart = np.flatnonzero((eef > PART_M) | (obj > PART_M))
    part = int(apart[0]) + 1 if len(apart) else None
    ref_ok = bool(rep.success.any())
    ref_step = int(np.argmax(rep.success)) + 1 if ref_ok else None
    with_release = ref_ok or rep.release_success_step is not None
    return Comparison(
        suite=ep.suite, task=ep.task, init=ep.init, seed=ep.seed, steps=ep.steps,
        metasim_success=ep.success, reference_success=ref_ok,
        reference_success_with_release=with_release, metasim_success_step=ep.success_step,
        reference_success_step=ref_step, reference_release_step=rep.release_success_step,
        metasim_check_step=_first(rep.shadow_success),
        eef_max_m=float(eef.max(initial=0.0)),
        eef_end_m=float(eef[-1]) if len(eef) else 0.0, object_max_m=float(obj.max(initial=0.0)),
        object_end_m=float(obj[-1]) if len(obj) else 0.0,
        part_step=part,
        cause=classify(ep, rep, part), error=ep.error or rep.error,
        fixtures={n: [float(v) for v in p] for n, p in ep.fixtures.items()},
    )  # fmt: skip


def _first(flags: np.ndarray | None) -> int | None:
    """1-based index of the first True in `flags` (T,), None when none (or no flags)."""
    if flags is None or not np.any(flags):
        return None
    return int(np.argmax(flags)) + 1


def object_fate(path: np.ndarray, start: np.ndarray) -> str:
    """What happened to the moved object on the side that failed: path (T, 3) after each
    step, start (3,) where it was when the policy took over. 'not reached' (it never left
    that place), 'object dropped' (lifted, then ended low again), else 'placed off
    target'."""
    moved = np.linalg.norm(path - start, axis=1).max(initial=0.0)
    if moved < MOVED_M:
        return "not reached"
    rise = path[:, 2] - start[2]
    if rise.max(initial=0.0) > LIFT_M and rise[-1] < LIFT_M / 2:
        return "object dropped"
    return "placed off target"


def _fate(path: np.ndarray, start: np.ndarray, settle: int) -> str:
    """`object_fate` of the policy's part of `path` (T, 3): after the `settle` steps,
    from where the object rested then (`start` (3,) when nothing settled)."""
    if 0 < settle < len(path):
        return object_fate(path[settle:], path[settle - 1])
    return object_fate(path, start)


def classify(ep: MetasimEpisode, rep: Replay, part_step: int | None = None) -> str:
    """The cause of a disagreement ('agree' when both sides agree): LIBERO's goal held
    at most LATE_STEPS release steps after the actions (a timing offset: the object came
    to rest a step later), or later, once the hand had opened; else the failing side's
    moved object after the settle steps (`object_fate`), prefixed 'parted while
    settling' when the runs were already PART_M apart before the policy acted (objects
    that drop into place from an init state may come to rest elsewhere)."""
    ref_ok = bool(rep.success.any())
    if ep.success == ref_ok:
        return "agree"
    late = rep.release_success_step
    if ep.success and late is not None:
        if late <= LATE_STEPS:
            return f"LIBERO success {LATE_STEPS} steps later at most"
        return f"LIBERO success within {rep.release_steps} release steps"
    moved = next(iter(ep.objects), None)
    side, path = ("LIBERO", rep.objects) if ep.success else ("metasim", ep.objects)
    if moved is None:
        return f"{side} failure"
    fate = _fate(path[moved], rep.start_objects[moved], SETTLE_STEPS)  # same start on both
    settling = part_step is not None and part_step <= SETTLE_STEPS
    return f"{'parted while settling; ' if settling else ''}{side}: {fate}"


def episode_to_json(c: Comparison) -> str:
    return json.dumps(asdict(c))


def load_done(path: Path) -> dict[tuple[str, int, int, str], Comparison]:
    """Comparisons already in a jsonl file (a resumed run skips them); a line that is not
    one is an input error naming it, a partial last line (a killed run's) is cut off."""
    keys = frozenset({"suite", "task", "init", "mode"})
    out: dict[tuple[str, int, int, str], Comparison] = {}
    for i, rec in enumerate(read_records(path, keys, "an xcheck comparison", True), 1):
        try:
            c = Comparison(**rec)
        except TypeError as exc:
            raise MetasimInputError(str(path), [f"record {i}: {exc}"]) from None
        out[c.key()] = c
    return out
