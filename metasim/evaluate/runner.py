"""`metasim eval`: every task of a suite, one policy, a run folder with the results.

RUN_DIR/episodes.duckdb    the append-only store, one row per finished episode
RUN_DIR/manifest.json      config, versions, git commit, seeds
RUN_DIR/episodes.parquet   one row per episode (task, episode, seed, success, progress,
                           steps, wall_time_s, error)
RUN_DIR/summary.json       {"tasks": {task: {"success_rate", "n", "ci95": [lo, hi], ...}},
                            "config": {...}, "versions": {...}}
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import platform
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from metasim.errors import MetasimInputError
from metasim.evaluate.cell_batches import CellBatches
from metasim.evaluate.cell_summary import adaptive_summary, summarize, summarize_cells
from metasim.evaluate.checkpoint import checkpoint_record
from metasim.evaluate.config import EvalConfig
from metasim.evaluate.content import scene_record
from metasim.evaluate.executors import BatchShard, Shard, check_ray, run_local, run_ray
from metasim.evaluate.plan import Plan, PlanItem
from metasim.evaluate.records import EpisodeRecord, RunSummary
from metasim.evaluate.render_record import background_records, image_inputs, renderer_record
from metasim.evaluate.store import RunStore
from metasim.paths import ROOT
from metasim.perturb import Grid
from metasim.sim import UnsupportedScene
from metasim.stats import sensitivity_summary, stratified_bootstrap_ci
from metasim.stats.adaptive import StoppingRule
from metasim.stats.aggregates import AGGREGATES
from metasim.stats.sensitivity import variance_shares

PLAN_BLOCK = 4096  # episodes per local shard (one env and policy each); >= num_envs' bound


@dataclass
class RunResult:
    run_dir: Path
    summary: RunSummary
    records: list[EpisodeRecord]


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("metasim", "mujoco", "numpy", "gymnasium", "hydra-core", "pydantic"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        out["git_commit"] = commit.stdout.strip() if commit.returncode == 0 else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        out["git_commit"] = "unknown"
    return out


def default_run_dir(cfg: EvalConfig) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{stamp}-{cfg.suite.name}-{cfg.policy.kind}"


def manifest(
    cfg: EvalConfig, tasks: list[str], cells: list[str], scenes: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What reproduces the run: config, versions, git commit, per-episode seeds, and the
    content hash of each task's scene (`scenes`, `metasim.evaluate.content`)."""
    from metasim.policies.conventions import GRIPPER_MEANING
    from metasim.sim import backend_fidelity

    conv = cfg.rollout.actions
    conventions = {
        "actions": conv.model_dump(),
        "env_action_space": (
            conv.env_space
            if conv.env_space == "joint_pos"
            else "ee_delta on position-driven robots, osc_pose on torque-driven ones"
        ),
        "gripper": f"{conv.gripper}: {GRIPPER_MEANING[conv.gripper]}",
        "observation": (
            cfg.rollout.observation.model_dump(mode="json", exclude_unset=True)
            if "observation" in cfg.policy.model_fields_set
            else "the env's observation groups"
        ),
        "chunks": (
            f"temporal ensembling, weight exp({cfg.policy.ensemble} * age)"
            if cfg.policy.ensemble is not None
            else f"execute {cfg.policy.execute or 'all'} actions of each chunk"
        ),
    }
    config = cfg.model_dump()
    return {
        "config": config,
        "policy_conventions": conventions,
        "checkpoint": checkpoint_record(config["policy"]),
        "renderer": renderer_record(cfg.render),
        "versions": versions(),
        "backend_fidelity": backend_fidelity(cfg.backend),
        "tasks": tasks,
        "scenes": scenes or {},
        "cells": cells,
        "episode_seeds": "episode k of every task and cell: episode_seed(config.seed, k)",
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def run_eval(cfg: EvalConfig, progress: Any | None = None, extend: bool = False) -> RunResult:
    """Evaluate `cfg.policy` on every task of `cfg.suite` and every cell of the grid
    `cfg.perturbation`, into the run folder.

    Episodes are appended to the run's store as they finish; run again into the same
    folder (`out=`) and only the episodes it does not hold yet are run. Episode k uses
    the same seed in every cell (common random numbers), so cells differ only by their
    factors and the comparison with the nominal cell is paired. `extend`: a resumed run
    may have more episodes per task and cell than before (`RunStore.check_manifest`).
    """
    plan = Plan.of(cfg)  # every task and cell is checked before any runs
    names, cells = plan.names, plan.cells
    preflight(cfg, plan)  # a bad policy option or checkpoint, before the folder exists
    run_dir = Path(cfg.out) if cfg.out else default_run_dir(cfg)
    store = RunStore(run_dir)
    start = time.perf_counter()
    closed = False
    try:
        scenes = scene_record(plan.tasks)
        extra = {"backgrounds": b} if (b := background_records(plan, cfg.render)) else {}
        batches = CellBatches.of(cfg, plan)  # cells run as worlds of one batch (if asked)
        extra |= {"cell_batches": c} if (c := batches.record()) else {}
        store.check_manifest({**manifest(cfg, names, plan.cell_ids, scenes), **extra}, extend)
        runner = _Runner(cfg, store, progress, names, len(cells))
        adaptive: dict[str, Any] = {}
        for item in plan.items():
            if cfg.adaptive:
                n = runner.run_adaptive(item)
                adaptive.setdefault(item.name, {})[item.cell.id] = {
                    "episodes": n,
                    "saved": cfg.episodes - n,
                }
            elif not batches.queue(runner, item, runner.block):
                runner.queue(item, item.episodes)
        runner.flush()
        cell_ids = [c.id for c in cells]
        records = [r for r in store.records() if r.task in names and r.cell in cell_ids]
        records.sort(key=lambda r: (names.index(r.task), cell_ids.index(r.cell), r.episode))
        store.export_parquet(names, cell_ids)
        summary = RunSummary(
            tasks=summarize(records, names),
            cells=summarize_cells(records, names, cells),
            aggregate=aggregate(records, names, cfg.seed),
            **sensitivity(records, names, plan.grid),
            adaptive=adaptive_summary(cfg, adaptive),
            image_inputs=image_inputs(cfg.render, cfg.suite.tasks),
            **extra,
            config=cfg.model_dump(),
            versions=versions(),
            wall_time_s=time.perf_counter() - start,
            run_dir=str(run_dir),
        )
        summary.write(run_dir)
    except BaseException:
        closed = store.discard_unused()  # refused before its first episode: no folder
        raise
    finally:
        if not closed:
            store.close()  # the run folder stays locked until its summary is written
    return RunResult(run_dir, summary, records)


def preflight(cfg: EvalConfig, plan: Plan) -> None:
    """What would refuse the run as it starts, checked before its folder is written: the
    policy's options, what it needs on this machine (a checkpoint folder, when it runs
    here), the Ray cluster it runs on, whether its conventions fit the first task's
    robot and cameras, and whether that task's envs fit in memory."""
    from metasim.evaluate.policy_io import image_bytes_per_env
    from metasim.evaluate.rollout import check_fit
    from metasim.sim.memory import check_env_memory

    spec = cfg.rollout
    if cfg.executor == "local":
        spec.options.preflight()
    else:
        check_ray(cfg.ray_address)  # installed, and a cluster address given answers
    first = next(plan.items(), None)
    if first is not None:
        compiled = first.compile()
        _, views = check_fit(compiled, spec)
        images = image_bytes_per_env(compiled, views, cfg.render, cfg.render_spp)
        n, where = min(cfg.num_envs, cfg.episodes), f"num_envs={cfg.num_envs}"
        check_env_memory(  # the first task's envs and images fit (device physics: images)
            compiled.model, n, where, first.name, images=images, physics=cfg.backend == "mujoco"
        )


def aggregate(records: list[EpisodeRecord], tasks: list[str], seed: int) -> dict[str, Any]:
    """Mean, median, IQM and optimality gap of the per-task success rates, with 95%
    intervals from a bootstrap that resamples episodes within each task (the uncertainty
    of one checkpoint on these tasks; runs of several checkpoints or seeds go through
    `metasim.stats.stratified_bootstrap_ci` over runs instead)."""
    per_task = [np.array([r.success for r in records if r.task == t], float) for t in tasks]
    n = min((len(x) for x in per_task), default=0)
    if n == 0:
        return {}
    episodes = np.stack([x[:n] for x in per_task], axis=1)  # (episodes, tasks)
    out: dict[str, Any] = {
        "method": "percentile bootstrap, episodes resampled within each task, 2000 reps",
        "episodes_per_task": n,
    }
    for name, fn in AGGREGATES.items():

        def of_rates(m: np.ndarray, fn: Any = fn) -> float:
            return float(fn(m.mean(axis=0, keepdims=True)))

        est, lo, hi = stratified_bootstrap_ci(episodes, of_rates, reps=2000, seed=seed)
        out[name] = {"value": est, "ci95": [lo, hi]}
    return out


def sensitivity(records: list[EpisodeRecord], tasks: list[str], grid: Grid) -> dict[str, Any]:
    """Per factor, worst first: the success drop against the nominal level with its 95%
    interval (Newcombe), pooled over tasks and per task. Empty without a grid."""
    if not grid.factors:
        return {}
    names = [f.name for f in grid.factors]
    nominal = {f.name: _level_key(f.nominal_value) for f in grid.factors}

    def summary_of(rows: list[EpisodeRecord]) -> dict[str, Any]:
        levels = {
            f: np.array([_level_key(r.factors[f]) for r in rows], dtype=object) for f in names
        }
        return sensitivity_summary(levels, np.array([r.success for r in rows]), nominal)

    out: dict[str, Any] = {
        "sensitivity": summary_of(records),
        "sensitivity_by_task": {t: summary_of([r for r in records if r.task == t]) for t in tasks},
    }
    if grid.design == "factorial" and records:
        levels = {
            f: np.array([_level_key(r.factors[f]) for r in records], dtype=object) for f in names
        }
        shares = variance_shares(levels, np.array([r.success for r in records]))
        out["variance_shares"] = {
            "first_order": shares.first_order,
            "total_order": shares.total_order,
            "interaction": shares.interaction,
            "variance": shares.variance,
            "noise_variance": shares.noise_variance,
            "method": "exact Sobol indices of the factorial grid's cell means (pooled tasks)",
        }
    return out


def _level_key(value: Any) -> Any:
    """A hashable level: numbers and strings as they are, lists as JSON."""
    return json.dumps(value) if isinstance(value, list | dict) else value


class _Runner:
    """Turns (task, cell, episodes) into shards for the configured executor and appends
    every record to the store as it arrives."""

    def __init__(
        self,
        cfg: EvalConfig,
        store: RunStore,
        progress: Any | None,
        tasks: list[str],
        n_cells: int,
    ) -> None:
        self.cfg, self.store, self.progress = cfg, store, progress
        self.results: dict[tuple[str, str], dict[int, bool]] = {}
        for r in store.records():
            self.results.setdefault((r.task, r.cell), {})[r.episode] = r.success
        self.pending: list[Iterator[Shard | BatchShard]] = []
        self.block = PLAN_BLOCK if cfg.executor == "local" else cfg.shard_episodes
        self.bars: dict[str, Any] = {}
        if progress is not None:
            for name in tasks:
                self.bars[name] = progress.add_task(name, total=cfg.episodes * n_cells)
                held = sum(len(v) for (t, _), v in self.results.items() if t == name)
                progress.advance(self.bars[name], held)

    def queue(self, item: PlanItem, episodes: Iterable[int]) -> None:
        """Plan shards for the `episodes` of this task and cell that are not recorded yet.
        Shards are made as the executor asks for them, so memory does not grow with the
        episode count."""
        held = self.results.get((item.name, item.cell.id), {})
        self.pending.append(self._shards(item, (k for k in episodes if k not in held), self.block))

    def _shards(self, item: PlanItem, todo: Iterator[int], block: int) -> Iterator[Shard]:
        while batch := tuple(itertools.islice(todo, block)):
            yield item.shard(batch, self.cfg.rollout)

    def flush(self) -> None:
        """Run every queued shard; store each record as it arrives."""
        planned, self.pending = itertools.chain.from_iterable(self.pending), []
        first = next(planned, None)
        if first is None:
            return
        shards = itertools.chain([first], planned)
        if self.cfg.executor == "ray":
            stream = run_ray(shards, self.cfg.ray_address)
        else:
            stream = run_local(shards)
        try:
            for rec in stream:
                self.store.append(rec)
                self.results.setdefault((rec.task, rec.cell), {})[rec.episode] = rec.success
                if self.progress is not None:
                    self.progress.advance(self.bars[rec.task])
        except UnsupportedScene as exc:
            raise MetasimInputError(
                f"backend={self.cfg.backend}",
                [str(exc)],
                (
                    "Run those tasks with backend=mujoco, or leave"
                    if self.cfg.backend != "mujoco"
                    else "Leave"
                )
                + " them out with suite.tasks=[...]; the episodes already "
                "recorded are kept",
            ) from None

    def run_adaptive(self, item: PlanItem) -> int:
        """Episodes 0, 1, ... in blocks until the cell's 95% interval is narrow enough
        (RoboLab's rule); returns how many episodes the cell used."""
        cfg = self.cfg
        rule = StoppingRule(cfg.adaptive_width, min(cfg.adaptive_min, cfg.episodes), cfg.episodes)
        block = max(cfg.num_envs, 1)
        target = rule.min_episodes
        while True:
            self.queue(item, range(target))
            self.flush()
            held = self.results.get((item.name, item.cell.id), {})
            k = sum(held[e] for e in range(target))
            if rule.should_stop(k, target):
                return target
            target = min(target + block, rule.max_episodes)
