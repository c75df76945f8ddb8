"""Does a policy's metasim success mean a robosuite success?
(`metasim check xcheck --benchmark robosuite`.)

For each task and episode: metasim runs the policy closed-loop (`run_task`, the eval
path), recording through the rollout's hooks the start state in robosuite's joint layout
(`StateMap`, with the placed bodies' poses) and every action the simulator applied; the
reference (robosuite 1.4.0) is set to that start state and replays the actions open-loop,
its `_check_success()` read after every step. When it does not succeed within the
actions, the last action is held up to `HOLD_STEPS` more steps (reported apart: a success
a few steps later is a timing offset, e.g. a door 0.29 rad open when metasim's reached
0.30). Per task: both success counts, how many of
metasim's successes robosuite confirms, and the paired 95% interval on the difference of
the two rates (`metasim.stats.paired`: the outcomes of one episode are paired).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.hooks import Hooks
from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.robosuite.checks.states import StateMap, state_map
from metasim.robosuite.importer.export import MODEL_SEED
from metasim.robosuite.reference.simulator import RobosuiteRef
from metasim.robosuite.tasks import task_facts
from metasim.scene.sources import compile_task
from metasim.stats.paired import PairedTable, paired_difference_interval

HOLD_STEPS = 10  # steps of the last action the reference may take after the actions
PART_ATOL = 1e-6  # joint positions farther apart than this: the two runs have parted


@dataclass
class Episode:
    """One metasim episode as the reference replays it: the start state (qpos (nq,), qvel
    (nv,) in robosuite's layout; placed bodies' world poses (k, 3), (k, 4)), the applied
    actions (T, 7) and the joint positions after each of them (T, nq), robosuite's layout."""

    task: str
    episode: int
    success: bool
    steps: int
    qpos: np.ndarray
    qvel: np.ndarray
    body_pos: np.ndarray
    body_quat: np.ndarray
    actions: list[np.ndarray]
    traj: list[np.ndarray]


class Recorder(Hooks):
    """`run_task`'s hooks (`on_env`, `on_start`, `on_applied`): one trace per episode."""

    def __init__(self, task: str, smap: StateMap) -> None:
        self.task, self.smap = task, smap
        self.env: MetasimVectorEnv | None = None
        self.traces: dict[int, Episode] = {}

    def on_env(self, env: MetasimVectorEnv) -> None:
        self.env = env

    def on_start(self, slots: np.ndarray, episodes: np.ndarray) -> None:
        assert self.env is not None
        kin, b = self.env.handler.kinematics(), self.smap.bodies
        for slot, k in zip(slots, episodes, strict=True):
            s = int(slot)
            self.traces[int(k)] = Episode(
                self.task, int(k), False, 0, kin.qpos[s, self.smap.qpos].copy(),
                kin.qvel[s, self.smap.qvel].copy(), kin.body_pos[s, b].copy(),
                kin.body_quat[s, b].copy(), [], [],
            )  # fmt: skip

    def on_applied(self, episodes: np.ndarray, actions: np.ndarray) -> None:
        assert self.env is not None
        qpos = self.env.handler.kinematics().qpos
        for slot in np.flatnonzero(episodes >= 0):
            trace = self.traces[int(episodes[slot])]
            trace.actions.append(actions[slot].copy())
            trace.traj.append(qpos[slot, self.smap.qpos].copy())


def run_metasim(task: str, spec: RolloutSpec, episodes: list[int]) -> Iterator[Episode]:
    """`spec`'s policy on `episodes` of robosuite task `task`, each episode recorded."""
    compiled = compile_task(f"robosuite:{task}")
    smap = state_map(task, compiled)
    # The placed bodies hang from the world: their world poses are robosuite's body_pos/quat.
    assert not compiled.model.body_parentid[smap.bodies].any()
    rec = Recorder(task, smap)
    for record in run_task(compiled, spec, episodes, hooks=rec):
        ep = rec.traces.pop(record.episode)
        ep.success, ep.steps = bool(record.success), int(record.steps)
        yield ep


@dataclass(frozen=True)
class Comparison:
    """One episode on both sides: outcomes and first success steps (1-based)."""

    task: str
    episode: int
    steps: int
    metasim_success: bool
    reference_success: bool
    metasim_success_step: int | None
    reference_success_step: int | None
    reference_hold_step: int | None = None  # the held step at which it succeeded, if later
    parted_step: int | None = None  # the first step whose joint positions differ > PART_ATOL


def reference_run(ref: RobosuiteRef, ep: Episode) -> dict[str, Any]:
    """`ep`'s actions in the loaded reference from its start state, the controller's
    included (`fresh`: robosuite's OSC built at that state, the gripper's command at zero,
    as metasim's episode starts; not what the previous replay left): per step its qpos
    (T, nq) and success (T,)."""
    ref.set_state(ep.qpos, ep.qvel, ep.body_pos, ep.body_quat, fresh=True)
    return ref.step(np.array(ep.actions))


def parted(ours: list[np.ndarray], theirs: np.ndarray) -> int | None:
    """The first step (1-based) at which the joint positions (T, nq) differ by more than
    `PART_ATOL`, None if never."""
    n = min(len(ours), len(theirs))
    far = np.abs(np.asarray(ours[:n]) - np.asarray(theirs[:n])).max(axis=1) > PART_ATOL
    return int(np.argmax(far)) + 1 if far.any() else None


def replay(ref: RobosuiteRef, ep: Episode) -> Comparison:
    """`ep`'s actions replayed in the loaded reference from its start state."""
    ok: np.ndarray = np.zeros(0, dtype=bool)
    part = None
    if ep.actions:
        out = reference_run(ref, ep)
        ok = np.asarray(out["success"], dtype=bool)
        part = parted(ep.traj, out["qpos"])
    first = int(np.argmax(ok)) + 1 if ok.any() else None
    late = None
    if first is None and ep.actions:
        hold = np.tile(ep.actions[-1], (HOLD_STEPS, 1))
        more = np.asarray(ref.step(hold)["success"], dtype=bool)
        late = int(np.argmax(more)) + 1 if more.any() else None
    return Comparison(ep.task, ep.episode, ep.steps, ep.success, first is not None,
                      ep.steps if ep.success else None, first, late, part)  # fmt: skip


def summarize(rows: list[Comparison]) -> dict[str, Any]:
    """Per task and over all: counts, the share of metasim's successes robosuite confirms,
    and the paired interval on the rate difference (metasim - robosuite)."""

    def one(sel: list[Comparison]) -> dict[str, Any]:
        ours = [c.metasim_success for c in sel]
        theirs = [c.reference_success for c in sel]
        table = PairedTable.of(ours, theirs)
        lo, hi = paired_difference_interval(table)
        held = sum(c.metasim_success and c.reference_hold_step is not None for c in sel)
        return {"episodes": len(sel), "metasim": sum(ours), "robosuite": sum(theirs),
                "both": table.a, "only_metasim": table.b, "only_robosuite": table.c,
                "confirmed": table.a / max(1, sum(ours)), "difference_95": [lo, hi],
                "confirmed_with_hold": (table.a + held) / max(1, sum(ours))}  # fmt: skip

    tasks = list(dict.fromkeys(c.task for c in rows))
    return {"tasks": {t: one([c for c in rows if c.task == t]) for t in tasks},
            "all": one(rows)}  # fmt: skip


def run_xcheck(
    tasks: list[str], episodes: list[int], spec: RolloutSpec, on_episode: Any = None
) -> tuple[list[Comparison], dict[str, Any]]:
    """Every (task, episode) in metasim and replayed in robosuite; the rows and summary."""
    rows: list[Comparison] = []
    with RobosuiteRef() as ref:
        for task in tasks:
            facts = task_facts(task)
            ref.load(facts.env, seed=MODEL_SEED, placed=list(facts.placed))
            for ep in run_metasim(task, spec, episodes):
                rows.append(replay(ref, ep))
                if on_episode is not None:
                    on_episode(rows[-1])
    return rows, summarize(rows)


def row_json(c: Comparison) -> dict[str, Any]:
    return asdict(c)
