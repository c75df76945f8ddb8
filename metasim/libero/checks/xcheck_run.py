"""`metasim check xcheck --benchmark libero` runs: episodes replayed in LIBERO or a policy
run closed-loop in LIBERO itself, appended to `<out>/xcheck.jsonl`, and the per-task
summary with the paired interval on the success-rate difference (`<out>/xcheck_summary.json`,
`metasim.libero.checks.xcheck_summary`).

Closed loop in the reference (`mode="closed_loop"`): LIBERO's env is the world, started
from the metasim episode's reset as a replay is (its fixture poses: metasim's episode's
draw, or with `fixture_draw` the harness's episode k, `metasim.libero.harness_draw`); a
shadow metasim env of the same task is set to the reference's qpos/qvel after every step
(by joint name, the init-state map) and builds the observation metasim's policies expect at the
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
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from metasim.appends import append_text
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.errors import MetasimInputError
from metasim.evaluate.policy_io import camera_views, converter_for, policy_context
from metasim.evaluate.resume import check_resume, rollout_key
from metasim.evaluate.spec import RolloutSpec
from metasim.guards import write_atomic
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
from metasim.libero.checks.xcheck_summary import as_json, format_summary, summarize
from metasim.libero.importer.init_states import init_state_map
from metasim.libero.importer.scene import LiberoTask, load_task
from metasim.libero.reference.simulator import ReferenceSim
from metasim.policies.base import make_policy
from metasim.scene.compile import compile_scene
from metasim.sim.base import Kinematics
from metasim.tasks.predicates import TaskView

JSONL, SUMMARY = "xcheck.jsonl", "xcheck_summary.json"
KEY = "xcheck_key.json"  # the outcome key the jsonl's episodes were run with (resume.py)


def check_folder(
    out: Path, spec: RolloutSpec, release: int, fixture_draw: str | None = None
) -> None:
    """Make `out` and record (or, resuming, check) the outcome key of its episodes: the
    policy with all its options, seed, backend, chunk execution, the release steps and
    the harness whose fixture draw the episodes take (when one does). A folder of another
    key, or with episodes but no key, is refused (exit 2)."""
    out.mkdir(parents=True, exist_ok=True)
    if (out / JSONL).exists() and not (out / KEY).exists():
        raise MetasimInputError(
            str(out),
            [f"it holds {JSONL} but no {KEY} saying which policy and settings ran them"],
            "Choose another --out (a folder written before resumes were checked)",
        )
    key = {**rollout_key(spec), "release": release}
    if fixture_draw is not None:  # (a folder of seed-drawn pairs keeps its key as it was)
        key["fixture_draw"] = fixture_draw
    check_resume(out / KEY, key, "--out")


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
        """Reset the shadow env for `ep`: its reset gives the episode's fixture poses (from
        the episode's seed, or the harness's draw of episode k the task was loaded with),
        the poses metasim's episode ran with (and that `run` puts LIBERO's fixtures at);
        the state is synced from LIBERO's next."""
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
        seen = h.kinematics(at="observed")  # the state entering the observed substep
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
    append_text(path, episode_to_json(c) + "\n")  # never through a symlink


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
    fixture_draw: str | None = None,
) -> dict[str, Any]:
    """Cross-check `spec`'s policy on every (task, init): replays, and with `closed_loop`
    LIBERO closed-loop runs too; resumes from `<out>/xcheck.jsonl` when `<out>/xcheck_key.json`
    holds the same outcome key (`check_folder`), refuses it otherwise; returns (and writes)
    the summary of every requested pair the file holds. `shard` (i, n) runs only pair
    number j (task-major order) with j % n == i, so n processes can share one folder.
    `fixture_draw` (a harness): metasim's episode k, and so the pair, takes the fixture
    poses of that harness's episode k (`run_metasim`)."""
    check_folder(out, spec, release, fixture_draw)
    path = out / JSONL
    done = load_done(path)
    modes = ["replay", "closed_loop"] if closed_loop else ["replay"]
    todo = _todo(tasks, inits, modes, done, shard)
    sim = (ref or ReferenceSim()) if todo else None
    try:
        for (suite, task), ks in todo.items():
            assert sim is not None
            checks = _task_checks(
                sim, suite, task, ks, spec, closed_loop, release, done, fixture_draw
            )
            for c in checks:
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
    write_atomic(out / SUMMARY, as_json(summary))
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
    fixture_draw: str | None = None,
) -> Iterator[Comparison]:
    """The comparisons of one task's `inits` that `done` does not hold, as they finish."""
    info = ref.load(suite, task, cameras=False)
    imported = load_task(f"libero:{suite}/{task}", fixture_draw=fixture_draw)
    loop = ClosedLoop(imported, spec) if closed_loop else None
    try:
        for ep in run_metasim(suite, task, inits, spec, fixture_draw):
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


__all__ = ["format_summary", "run_xcheck", "summarize"]
