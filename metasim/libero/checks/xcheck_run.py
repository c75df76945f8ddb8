"""`metasim libero xcheck` runs: episodes replayed in LIBERO or a policy run closed-loop
in LIBERO itself, appended to `<out>/xcheck.jsonl`, and the per-task summary with the
paired interval on the success-rate difference (`<out>/xcheck_summary.json`).

Closed loop in the reference (`mode="closed_loop"`): LIBERO's env is the world, started
from the metasim episode's reset as a replay is (LIBERO's own fixture placement is not
reproducible: two resets with one seed place them up to 1.6 cm apart); a shadow metasim
env of the same task is set to the reference's qpos/qvel after every step (by joint
name, the init-state map) and builds the observation metasim's policies expect at the
instant LIBERO's harnesses observe (substep 24 of 25, as metasim's own LIBERO envs):
state and camera images rendered by metasim from the reference's state entering that
substep, joint state after it (not LIBERO's frames). The policy's actions,
converted as in `run_task`, go to LIBERO; the settle steps come first, as on both sides
of a replay. The episode ends LATE_STEPS steps after LIBERO's first success (so that
metasim's goal check, evaluated on the synced state every step, may hold a step later
too) or at the suite's step limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.errors import MetasimInputError
from metasim.evaluate.policy_io import camera_views, converter_for, policy_context
from metasim.evaluate.resume import check_resume, rollout_key
from metasim.evaluate.spec import RolloutSpec
from metasim.libero.checks.xcheck import (
    LATE_STEPS,
    RELEASE_STEPS,
    Comparison,
    MetasimEpisode,
    Replay,
    compare,
    episode_to_json,
    goal_objects,
    load_done,
    replay,
    run_metasim,
)
from metasim.libero.importer.init_states import init_state_map
from metasim.libero.importer.scene import LiberoTask, load_task
from metasim.libero.reference.simulator import ReferenceSim
from metasim.policies.base import make_policy
from metasim.scene.compile import compile_scene
from metasim.sim.base import Kinematics
from metasim.stats.intervals import success_interval
from metasim.stats.paired import PairedTable, paired_difference_interval
from metasim.tasks.predicates import TaskView

JSONL, SUMMARY = "xcheck.jsonl", "xcheck_summary.json"
KEY = "xcheck_key.json"  # the outcome key the jsonl's episodes were run with (resume.py)


def check_folder(out: Path, spec: RolloutSpec, release: int) -> None:
    """Make `out` and record (or, resuming, check) the outcome key of its episodes: the
    policy with all its options, seed, backend, chunk execution and the release steps.
    A folder of another key, or with episodes but no key, is refused (exit 2)."""
    out.mkdir(parents=True, exist_ok=True)
    if (out / JSONL).exists() and not (out / KEY).exists():
        raise MetasimInputError(
            str(out),
            [f"it holds {JSONL} but no {KEY} saying which policy and settings ran them"],
            "Choose another --out (a folder written before resumes were checked)",
        )
    check_resume(out / KEY, {**rollout_key(spec), "release": release}, "--out")


class ClosedLoop:
    """A policy driving the reference env through a shadow metasim env (module doc)."""

    def __init__(self, task: LiberoTask, spec: RolloutSpec) -> None:
        if spec.ensemble is not None:
            raise ValueError("closed-loop xcheck executes chunks; temporal ensembling is not run")
        self.task, self.spec = task, spec
        self.compiled = compile_scene(task.scene)
        self.mapping = init_state_map(task.problem, self.compiled)
        self.convert = converter_for(self.compiled, spec.actions)
        self.env = MetasimVectorEnv(
            self.compiled, 1, action_space=self.convert.env_space, autoreset=False,
            cameras=camera_views(self.compiled, spec.observation),
        )  # fmt: skip
        ctx = policy_context(self.env, self.convert.env_space, spec.options)
        self.policy = make_policy(spec.policy, ctx)
        self.env.add_views(self.policy.views)
        self.objects = goal_objects(task)

    def reset_shadow(self, ep: MetasimEpisode) -> None:
        """Reset the shadow env for `ep`: its reset draws the episode's fixture poses from
        the episode's seed, the poses metasim's episode ran with (and that `run` puts
        LIBERO's fixtures at); the state is synced from LIBERO's next."""
        self.env.reset(options={"env_ids": [0], "seeds": [ep.seed], "episodes": [ep.init]})

    def _set(self, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Set the shadow env to the reference's state."""
        state = self.env.handler.get_state()
        state.qpos[0, self.mapping.qpos_index] = qpos
        state.qvel[0, self.mapping.qvel_index] = qvel
        self.env.handler.set_state(state)

    def _sync(self, qpos: np.ndarray, qvel: np.ndarray) -> dict[str, Any]:
        """Set the shadow env to the reference's state; its observation of it."""
        self._set(qpos, qvel)
        return self.env.observe()

    def _observed(self, step: dict[str, Any]) -> dict[str, Any]:
        """The shadow env's observation at the instant LIBERO's harnesses observe
        (`task.observe_substep`, the reference's states around it): images and poses of
        the state entering that substep, joint state after it."""
        self._set(step["obs_pre_qpos"][0], step["obs_pre_qvel"][0])
        h = self.env.handler
        seen = h.observed_kinematics()  # the state entering the observed substep
        after = h.get_state()
        after.qpos[0, self.mapping.qpos_index] = step["obs_qpos"][0]
        after.qvel[0, self.mapping.qvel_index] = step["obs_qvel"][0]
        kin = Kinematics(after.qpos, after.qvel, seen.body_pos.copy(), seen.body_quat.copy(),
                         seen.site_pos.copy(), seen.site_mat.copy())  # fmt: skip
        return self.env.observe(kin)

    def _action(self, obs: dict[str, Any], chunk: list[np.ndarray]) -> np.ndarray:
        """The next env-space action (7,): from the current chunk, asking for a new one
        when it is used up (`spec.execute` actions of each, or all of it)."""
        if not chunk:
            raw = np.asarray(self.policy.act(obs, np.array([0])), dtype=np.float64)[0]
            chunk.extend(raw[: self.spec.execute or len(raw)])
        now = chunk.pop(0)[None]
        state = {} if self.convert.identity else self.env.robot_state()
        return np.asarray(self.convert(now, state))[0]

    def _goal(self, start_body_pos: np.ndarray) -> bool:
        """metasim's success predicate on the synced (a reference's) state."""
        kin = self.env.handler.kinematics()
        contacts = self.env.handler.contacts() if self.env.task.needs_contacts else None
        return bool(self.env.task.success(TaskView(kin, start_body_pos, contacts))[0])

    def run(self, ref: ReferenceSim, info: dict[str, Any], ep: MetasimEpisode) -> Replay:
        """One closed-loop episode from metasim's reset of `ep` (its init state, fixture
        poses and start state, as a replay starts). `Replay.shadow_success` (T,):
        metasim's goal check at each step on the state LIBERO's done reads (the state
        entering the step's last physics substep)."""
        ref.reset(init=ep.init, seed=0)
        roots = info["fixtures"]
        ref.place_fixtures({roots[n]: p for n, p in ep.fixtures.items() if n in roots})
        start = ref.set_state(ep.qpos, ep.qvel)
        self.reset_shadow(ep)
        obs = self._sync(start["qpos"], start["qvel"])
        start_body_pos = self.env.handler.kinematics().body_pos.copy()
        self.policy.reset(self.compiled.scene.task.instruction)
        settle = self.compiled.scene.task.settle_steps
        hold = self.env.controller.settle_action(1)[0] if settle else None
        rows = {n: info["bodies"].index(info["objects"][n]) for n in self.objects}
        chunk: list[np.ndarray] = []
        eef, objs, success, shadow = [], [], [], []
        error = None
        for t in range(self.compiled.max_steps):
            try:
                action = hold if hold is not None and t < settle else self._action(obs, chunk)
            except Exception as exc:  # the policy failed: the episode fails, the run goes on
                error = f"policy error: {type(exc).__name__}: {exc}"
                break
            # the states around the substep LIBERO's harnesses observe at (24; this
            # reference's own sampling moved with set_state's forced update)
            step = ref.step(action[None], state_at=self.compiled.scene.task.observe_substep)
            eef.append(step["eef_pos"][0])
            objs.append([step["body_xpos"][0, i] for i in rows.values()])
            success.append(bool(step["success"][0]))
            # LIBERO's done reads the state entering the step's last substep: metasim's
            # goal is judged on that state, the policy observes the state after the step.
            self._set(step["pre_qpos"][0], step["pre_qvel"][0])
            shadow.append(self._goal(start_body_pos))
            # the policy sees the step at robosuite's observation instant (metasim's env
            # of a LIBERO scene observes there too); the state after the step comes last,
            # for the next action's conversion and the controller
            obs = self._observed(step)
            self._set(step["qpos"][0], step["qvel"][0])
            if any(success[: len(success) - LATE_STEPS]):
                break  # LATE_STEPS past LIBERO's success: metasim's check may hold a step later
        arr = np.array(objs).reshape(len(objs), len(rows), 3)
        return Replay(
            eef=np.array(eef),
            objects={n: arr[:, i] for i, n in enumerate(rows)},
            success=np.array(success),
            start_objects={n: start["body_xpos"][i] for n, i in rows.items()},
            shadow_success=np.array(shadow, dtype=bool),
            error=error,
        )

    def close(self) -> None:
        self.policy.close()
        self.env.close()


def _append(path: Path, c: Comparison) -> None:
    with path.open("a") as f:
        f.write(episode_to_json(c) + "\n")


def run_xcheck(
    tasks: list[tuple[str, int]],
    inits: list[int],
    spec: RolloutSpec,
    out: Path,
    closed_loop: bool = False,
    release: int = RELEASE_STEPS,
    ref: ReferenceSim | None = None,
    on_episode: Callable[[Comparison], None] | None = None,
    shard: tuple[int, int] = (0, 1),
) -> dict[str, Any]:
    """Cross-check `spec`'s policy on every (task, init): replays, and with `closed_loop`
    LIBERO closed-loop runs too; resumes from `<out>/xcheck.jsonl` when `<out>/xcheck_key.json`
    holds the same outcome key (`check_folder`), refuses it otherwise; returns (and writes)
    the summary of every requested pair the file holds. `shard` (i, n) runs only pair
    number j (task-major order) with j % n == i, so n processes can share one folder."""
    check_folder(out, spec, release)
    path = out / JSONL
    done = load_done(path)
    modes = ["replay", "closed_loop"] if closed_loop else ["replay"]
    todo = _todo(tasks, inits, modes, done, shard)
    sim = (ref or ReferenceSim()) if todo else None
    try:
        for (suite, task), ks in todo.items():
            assert sim is not None
            for c in _task_checks(sim, suite, task, ks, spec, closed_loop, release, done):
                _append(path, c)
                done[c.key()] = c
                if on_episode is not None:
                    on_episode(c)
    finally:
        if ref is None and sim is not None:
            sim.close()
    done = {**load_done(path), **done}  # what other shards appended meanwhile
    wanted = {(s, t, k, m) for s, t in tasks for k in inits for m in modes}
    summary = summarize([c for key, c in done.items() if key in wanted])
    (out / SUMMARY).write_text(_json(summary))
    return summary


def _todo(
    tasks: list[tuple[str, int]],
    inits: list[int],
    modes: list[str],
    done: dict[tuple[str, int, int, str], Comparison],
    shard: tuple[int, int],
) -> dict[tuple[str, int], list[int]]:
    """(suite, task) -> the inits of this shard that miss a mode in `done`."""
    out: dict[tuple[str, int], list[int]] = {}
    pairs = [(s, t, k) for s, t in tasks for k in inits]
    for j, (s, t, k) in enumerate(pairs):
        if j % shard[1] == shard[0] and any((s, t, k, m) not in done for m in modes):
            out.setdefault((s, t), []).append(k)
    return out


def _task_checks(
    ref: ReferenceSim,
    suite: str,
    task: int,
    inits: list[int],
    spec: RolloutSpec,
    closed_loop: bool,
    release: int,
    done: dict[tuple[str, int, int, str], Comparison],
) -> Iterator[Comparison]:
    """The comparisons of one task's `inits` that `done` does not hold, as they finish."""
    info = ref.load(suite, task, cameras=False)
    loop = ClosedLoop(load_task(f"libero:{suite}/{task}"), spec) if closed_loop else None
    try:
        for ep in run_metasim(suite, task, inits, spec):
            yield from _check(ref, info, ep, loop, release, done)
    finally:
        if loop is not None:
            loop.close()


def _check(
    ref: ReferenceSim,
    info: dict[str, Any],
    ep: MetasimEpisode,
    loop: ClosedLoop | None,
    release: int,
    done: dict[tuple[str, int, int, str], Comparison],
) -> list[Comparison]:
    """The comparisons of one metasim episode that `done` does not hold yet."""
    out = []
    if (ep.suite, ep.task, ep.init, "replay") not in done:
        start = time.perf_counter()
        c = compare(ep, replay(ref, info, ep, release))
        c.seconds = {"reference": round(time.perf_counter() - start, 2)}
        out.append(c)
    if loop is not None and (ep.suite, ep.task, ep.init, "closed_loop") not in done:
        start = time.perf_counter()
        rep = loop.run(ref, info, ep)
        c = replace(compare(ep, rep), mode="closed_loop")
        c.seconds = {"reference": round(time.perf_counter() - start, 2)}
        out.append(c)
    return out


def summarize(comparisons: list[Comparison]) -> dict[str, Any]:
    """Per mode and task (and pooled): n, metasim and reference success rates (Wilson
    95%), the paired difference metasim - reference with Newcombe's paired 95% interval,
    the reference's rate once the hand may open, and the disagreements by cause."""
    out: dict[str, Any] = {}
    for mode in sorted({c.mode for c in comparisons}):
        rows = [c for c in comparisons if c.mode == mode]
        tasks = sorted({(c.suite, c.task) for c in rows})
        per = {f"{s}/{t}": _task_summary([c for c in rows if (c.suite, c.task) == (s, t)])
               for s, t in tasks}  # fmt: skip
        out[mode] = {"tasks": per, "pooled": _task_summary(rows)}
    return out


def _task_summary(rows: list[Comparison]) -> dict[str, Any]:
    ms = [c.metasim_success for c in rows]
    rs = [c.reference_success for c in rows]
    table = PairedTable.of(ms, rs)
    n = table.n
    causes: dict[str, int] = {}
    for c in rows:
        if c.cause != "agree":
            causes[c.cause] = causes.get(c.cause, 0) + 1
    rate = lambda k: {"rate": k / n if n else 0.0, "ci95": list(success_interval(k, n))}  # noqa: E731
    return {
        "n": n,
        "metasim": rate(sum(ms)),
        "reference": rate(sum(rs)),
        "reference_with_release": rate(sum(c.reference_success_with_release for c in rows)),
        "difference": table.difference,
        "difference_ci95_paired": list(paired_difference_interval(table)),
        "table": asdict(table),
        "causes": causes,
        "metasim_successes_also_reference": f"{table.a}/{table.a + table.b}",
        **_check_agreement(rows),
    }


def _check_agreement(rows: list[Comparison]) -> dict[str, Any]:
    """Closed loop: how often metasim's goal check on LIBERO's own states agrees with
    LIBERO's (both held at some step, or neither), and the largest gap in steps between
    their first successes."""
    loop = [c for c in rows if c.mode == "closed_loop"]
    if not loop:
        return {}
    agree = sum((c.metasim_check_step is not None) == c.reference_success for c in loop)
    gaps = [
        abs(c.metasim_check_step - c.reference_success_step)
        for c in loop
        if c.metasim_check_step is not None and c.reference_success_step is not None
    ]
    return {"goal_checks_agree": f"{agree}/{len(loop)}", "goal_check_max_gap": max(gaps, default=0)}


def _json(value: Any) -> str:
    import json

    return json.dumps(value, indent=2)


def format_summary(summary: dict[str, Any]) -> str:
    """A readable table: one row per task and mode, then the causes of disagreement."""
    lines = [
        f"{'mode':<12} {'task':<20} {'n':>3} {'metasim':>8} {'LIBERO':>7} {'+release':>8} "
        f"{'diff [95% paired]':>24}  ms->LIBERO"
    ]
    for mode, block in summary.items():
        for name, s in [*block["tasks"].items(), ("pooled", block["pooled"])]:
            lo, hi = s["difference_ci95_paired"]
            lines.append(
                f"{mode:<12} {name:<20} {s['n']:>3} {s['metasim']['rate']:>8.2f} "
                f"{s['reference']['rate']:>7.2f} {s['reference_with_release']['rate']:>8.2f} "
                f"{s['difference']:>+8.2f} [{lo:+.2f}, {hi:+.2f}]   "
                f"{s['metasim_successes_also_reference']}"
            )
        for cause, k in block["pooled"]["causes"].items():
            lines.append(f"  {mode}: {k} x {cause}")
        if "goal_checks_agree" in block["pooled"]:
            p = block["pooled"]
            lines.append(
                f"  {mode}: metasim's goal check on LIBERO's states agrees with LIBERO's in "
                f"{p['goal_checks_agree']} (first successes at most {p['goal_check_max_gap']} "
                "steps apart)"
            )
    return "\n".join(lines)
