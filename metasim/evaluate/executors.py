"""Executors: where the episodes of a run are computed.

A run is split into shards (task x cell x block of episodes). The local executor runs
them in this process, streaming every episode as it ends; the Ray executor sends each
shard to a worker of a Ray cluster (`ray.init(address=...)`, or `RAY_ADDRESS`) and
streams the records of every shard that completes. A shard whose worker dies is retried
elsewhere by Ray (`max_retries`); only completed shards reach the store, and the
store's key refuses duplicates, so a retry can never count an episode twice. Episode k
starts from the same seed wherever it runs, so both executors give identical results.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metasim.envs.noise import RuntimeNoise
from metasim.errors import MetasimInputError
from metasim.evaluate.cells import CellPart
from metasim.evaluate.hooks import RolloutHooks
from metasim.evaluate.ray_connect import (
    bounded_retries,
    bounded_target,
    connect_error,
    token_mode_if_available,
)
from metasim.evaluate.rollout import EpisodeRecord, run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.scene import compile_scene
from metasim.scene.schema import Scene


@dataclass(frozen=True)
class Shard:
    """Episodes of one task in one cell; everything a worker needs, picklable."""

    scene: dict[str, Any]  # the cell's scene, as plain data
    source: str  # the scene file (relative asset paths resolve from its folder)
    episodes: tuple[int, ...]
    noise: RuntimeNoise
    cell: str
    factors: dict[str, Any]
    spec: RolloutSpec  # policy kind and options, conventions, chunking, seed, backend, ...


@dataclass(frozen=True)
class BatchShard:
    """Episodes of several cells of one task whose scenes compile to the same model (they
    differ only in what the env applies per world), run side by side in one batch."""

    scene: dict[str, Any]  # the cells' shared scene, as plain data
    source: str
    cells: tuple[CellPart, ...]
    spec: RolloutSpec


def run_shard(
    shard: Shard | BatchShard, hooks: RolloutHooks | None = None
) -> Iterator[EpisodeRecord]:
    """Run one shard here (what a worker does; `metasim report` films one with the
    hooks, see `run_task`)."""
    scene = Scene.model_validate(shard.scene)
    compiled = compile_scene(scene, source=Path(shard.source))
    if isinstance(shard, BatchShard):
        yield from run_task(compiled, shard.spec, (), cells=shard.cells, hooks=hooks)
        return
    yield from run_task(
        compiled,
        shard.spec,
        shard.episodes,
        noise=shard.noise,
        cell=shard.cell,
        factors=shard.factors,
        hooks=hooks,
    )


def _run_shard_list(shard: Shard | BatchShard) -> list[EpisodeRecord]:
    return list(run_shard(shard))


def run_local(shards: Iterable[Shard | BatchShard]) -> Iterator[EpisodeRecord]:
    for shard in shards:
        yield from run_shard(shard)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MetasimInputError(
            "executor=ray", ["Ray is not installed here; pip install 'metasim[ray]'"]
        ) from None
    return ray


def check_ray(address: str | None) -> None:
    """Before a run folder is written: Ray is installed and a cluster address given
    (`address` or RAY_ADDRESS) answers (see `ray_connect.bounded_target`)."""
    if not _import_ray().is_initialized() and (address or os.environ.get("RAY_ADDRESS")):
        bounded_target(address)  # (a stale ray_current_cluster file: noted as it connects)


def run_ray(
    shards: Iterable[Shard | BatchShard],
    address: str | None,
    max_retries: int = 3,
    window: int = 256,
) -> Iterator[EpisodeRecord]:
    """Run shards as Ray tasks, at most `window` in flight (shards are made as they are
    sent); yield the records of each shard as it completes."""
    ray = _import_ray()
    if ray.is_initialized():
        yield from _run_ray_tasks(ray, shards, max_retries, window)
        return
    target = bounded_target(address)  # an address that does not answer: exit 2, no hang
    with token_mode_if_available(target if target != "local" else None), bounded_retries(target):
        try:
            ray.init(address=target, ignore_reinit_error=True, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
            raise connect_error(target, exc) from None
        try:
            yield from _run_ray_tasks(ray, shards, max_retries, window)
        finally:
            ray.shutdown()


def _run_ray_tasks(
    ray: Any, shards: Iterable[Shard | BatchShard], max_retries: int, window: int
) -> Iterator[EpisodeRecord]:
    """Keep at most `window` shards in flight on the connected cluster; yield each
    completed shard's records."""
    remote = ray.remote(max_retries=max_retries, retry_exceptions=False, num_cpus=1)(
        _run_shard_list
    )
    todo = iter(shards)
    pending = {remote.remote(s): s for s in itertools.islice(todo, window)}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            pending.pop(ref)
            yield from ray.get(ref)
        pending.update({remote.remote(s): s for s in itertools.islice(todo, len(done))})
