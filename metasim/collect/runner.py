"""`metasim collect`: a policy's episodes (the scripted expert's) as a LeRobot dataset.

    metasim collect suite=tabletop policy=scripted episodes=20 perturbation=visual out=DIR

Tasks, cells and seeds are planned by the same run plan as `metasim eval`'s
(metasim.evaluate.plan: the suite's tasks from their task sources, the perturbation
grid's cells applied to each scene, episode k of every task and cell from
`episode_seed(seed, k)`), and episodes run through the evaluation loop (`run_task`)
with an observer that records every step's observation and action. The recorded cameras
are added to the env's views (`env.add_views`), so the policy sees exactly what it sees
under `metasim eval`. Episodes are written in episode order, so the same settings give
the same dataset whatever `num_envs` is; run it again into the same `out=` and only the
(task, cell) batches not committed yet are run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from metasim.collect import recording
from metasim.collect.dataset import DatasetWriter, features
from metasim.collect.options import CollectOptions
from metasim.collect.recording import Recording, frame_of
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.errors import MetasimInputError
from metasim.evaluate.config import EvalConfig
from metasim.evaluate.hooks import Hooks
from metasim.evaluate.plan import Plan, PlanItem
from metasim.evaluate.policy_io import image_bytes_per_env
from metasim.evaluate.records import EpisodeRecord
from metasim.evaluate.render_record import background_records
from metasim.evaluate.rollout import check_fit, run_task
from metasim.evaluate.runner import versions
from metasim.guards import write_atomic
from metasim.scene.compile import CompiledScene
from metasim.scene.schema import Scene
from metasim.sim.memory import check_env_memory


@dataclass
class CollectResult:
    root: Path
    per_task: dict[str, dict[str, int]]  # task -> {"run", "successes", "kept"}


def dataset_spec(
    cfg: EvalConfig, opts: CollectOptions, compiled: CompiledScene, rec: Recording
) -> dict[str, Any]:
    """What the dataset holds and how it was collected (a resume must match it)."""
    n_arm = len(compiled.index.arm_qpos)
    conv = cfg.rollout.actions
    spec = {
        "features": features(
            rec.image_shapes(compiled), rec.state_names(compiled), conv.names(n_arm)
        ),
        "fps": round(1.0 / compiled.control_dt),
        "action_convention": conv.model_dump(),
        "action": conv.describe(n_arm),
        "state": rec.describe_state(),
        "suite": cfg.suite.model_dump(),
        "policy": cfg.policy.model_dump(),
        "seed": cfg.seed,
        "perturbation": cfg.perturbation,
        "keep": opts.keep,
        "backend": cfg.backend,
    }
    if rec.preset is not None:
        spec["record"] = rec.preset
    if cfg.task_options:  # (a dataset collected before options existed resumes as it was)
        spec["task_options"] = dict(cfg.task_options)
    return spec


class Recorder(Hooks):
    """The loop's hooks: the frames of every running episode, from the obs batch."""

    def __init__(self, rec: Recording, compiled: CompiledScene) -> None:
        self.spec, self.compiled = rec.spec, compiled
        self.instruction = rec.instruction(compiled)
        self.frames: dict[int, list[dict[str, Any]]] = {}

    def on_env(self, env: MetasimVectorEnv) -> None:
        """Render the recorded cameras too."""
        env.add_views(self.spec.views(env.compiled))

    def observe(self, episodes: np.ndarray, obs: dict[str, Any], actions: np.ndarray) -> None:
        """`episodes` (B,) each slot's episode (-1: idle), `actions` (B, D)."""
        ids = np.flatnonzero(episodes >= 0)
        if not len(ids):
            return
        batch = self.spec.batch(obs, ids, self.instruction, self.compiled)
        for j, slot in enumerate(ids):
            frame = frame_of(batch, j, actions[slot], self.instruction)
            self.frames.setdefault(int(episodes[slot]), []).append(frame)


def _cameras(asked: list[str] | None, scene: Scene, compiled: CompiledScene) -> list[str]:
    """The cameras to record (default: every camera of the scene), checked against it."""
    names = [compiled.model.camera(i).name for i in range(compiled.model.ncam)]
    cameras = asked or names
    if not cameras:
        raise MetasimInputError(
            "command line", [f"cameras: the scene {scene.name!r} has no camera to record"]
        )
    missing = [c for c in cameras if c not in names]
    if missing:
        raise MetasimInputError(
            "command line",
            [f"cameras: the scene {scene.name!r} has no camera {missing[0]!r}"],
            f"Its cameras: {', '.join(names)}",
        )
    return cameras


def _recording(
    cfg: EvalConfig, opts: CollectOptions, scene: Scene, compiled: CompiledScene
) -> Recording:
    """metasim's own format over the asked cameras, or the preset's (`record=`)."""
    if opts.record is None:
        if opts.render_size is not None:
            raise MetasimInputError(
                "command line", ["render_size: only with record=PRESET (image_size sizes the rest)"]
            )
        return recording.own(_cameras(opts.cameras, scene, compiled), opts.image_size)
    if opts.cameras is not None:
        raise MetasimInputError(
            "command line", [f"cameras: record={opts.record} records the preset's own cameras"]
        )
    size = opts.image_size if "image_size" in opts.model_fields_set else None
    return recording.of_preset(opts.record, cfg.rollout.actions, size, opts.render_size)


Progress = Callable[[str, int, int], None]  # (task, episodes done, kept in dataset)


def collect(
    cfg: EvalConfig,
    opts: CollectOptions,
    start: Callable[[dict[str, int], int], None] | None = None,
    advance: Progress | None = None,
) -> CollectResult:
    """Run the policy on every task x cell x episode and write the dataset at `cfg.out`.

    `start(held, total)` is called once with the episodes each task already holds and
    the episodes per task; `advance(task, 1, kept)` as each episode is written."""
    plan = Plan.of(cfg)  # every task and cell is checked before any runs
    compiled = [task.compile(scene) for task, scene in plan.tasks]
    rec = _recording(cfg, opts, plan.tasks[0][1], compiled[0])
    for (task, scene), comp in zip(plan.tasks, compiled, strict=True):
        _cameras(rec.cameras, scene, comp)
        hz = round(1.0 / comp.control_dt)
        if hz != round(1.0 / compiled[0].control_dt):
            raise MetasimInputError(
                str(task.path),
                [f"task.control_hz is {hz}; the dataset's first task runs at another rate"],
            )
    cfg.rollout.options.preflight()  # what the policy needs here, before the folder
    for (task, _), comp in zip(plan.tasks, compiled, strict=True):
        _, views = check_fit(comp, cfg.rollout)  # the conventions fit every task's robot
        images = image_bytes_per_env(comp, views, cfg.render, cfg.render_spp)
        n, where = min(cfg.num_envs, cfg.episodes), f"num_envs={cfg.num_envs}"
        check_env_memory(  # and its envs and images fit in memory
            comp.model, n, where, str(task.ref), images=images, physics=cfg.backend == "mujoco"
        )
    spec = dataset_spec(cfg, opts, compiled[0], rec)
    writer = DatasetWriter(Path(str(cfg.out)), opts.repo_id or f"metasim/{cfg.suite.name}", spec)
    try:
        provenance = writer.root / "meta" / "metasim_versions.json"  # of the last run
        write_atomic(provenance, json.dumps(versions(), indent=2) + "\n")
        if backgrounds := background_records(plan, cfg.render):  # what the images showed
            shown = writer.root / "meta" / "metasim_backgrounds.json"
            write_atomic(shown, json.dumps(backgrounds, indent=2) + "\n")
        done = {(r["task"], r["cell"], r["episode"]) for r in writer.records()}
        if start is not None:
            held = {name: sum(t == name for t, _, _ in done) for name in plan.names}
            start(held, cfg.episodes * len(plan.cells))
        for item in plan.items():
            todo = [k for k in item.episodes if (item.name, item.cell.id, k) not in done]
            step = opts.commit_every or len(todo)
            for i in range(0, len(todo), max(step, 1)):  # one commit per `step` episodes
                _Batch(cfg, opts, writer, rec, advance).run(item, todo[i : i + step])
        writer.verify()  # what this run leaves loads, as what it resumed from did
        return CollectResult(writer.root, tally(writer.records(), plan.names))
    except BaseException:
        writer.discard_unused()  # refused before its first episode: no folder left
        raise
    finally:
        writer.close()


@dataclass
class _Batch:
    """One (task, cell) batch (or `commit_every` episodes of it): its episodes run,
    written in episode order, committed."""

    cfg: EvalConfig
    opts: CollectOptions
    writer: DatasetWriter
    rec: Recording
    advance: Progress | None

    def run(self, item: PlanItem, todo: list[int]) -> None:
        compiled = item.compile()
        recorder = Recorder(self.rec, compiled)
        finished: dict[int, EpisodeRecord] = {}
        order = iter(todo)
        nxt = next(order, None)
        self.writer.begin()
        records = run_task(
            compiled,
            self.cfg.rollout,
            todo,
            noise=item.noise,
            cell=item.cell.id,
            factors=item.cell.values,
            hooks=recorder,
        )
        for rec in records:
            finished[rec.episode] = rec
            while nxt is not None and nxt in finished:
                self._write(finished.pop(nxt), recorder.frames.pop(nxt, []))
                nxt = next(order, None)
        self.writer.commit()

    def _write(self, rec: EpisodeRecord, frames: list[dict[str, Any]]) -> None:
        keep = self.opts.keep == "all" or rec.success
        self.writer.add(frames, asdict(rec), keep and rec.error is None)
        if self.advance is not None:
            self.advance(rec.task, 1, self.writer.kept())


def tally(records: list[dict[str, Any]], tasks: list[str]) -> dict[str, dict[str, int]]:
    """Per task: episodes run, successes, episodes in the dataset."""
    return {
        t: {
            "run": sum(r["task"] == t for r in records),
            "successes": sum(r["task"] == t and r["success"] for r in records),
            "kept": sum(r["task"] == t and r["dataset_episode"] is not None for r in records),
        }
        for t in tasks
    }
