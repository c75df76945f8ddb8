"""The Meta-World reference worker: runs INSIDE the reference venv (.cache/metaworld-ref:
metaworld 3.1.1 on MuJoCo 3.3.0, gymnasium >= 1.1), never in metasim's process, and must
not import metasim.

Served by `metasim/sim/refwire.py` (`python -P refwire.py worker.py`: JSON lines, arrays
as base64, never pickle), as LIBERO's reference worker is; it calls `commands()` below.

Commands: versions · tasks(benchmark, split, seed) · variations(benchmark, split, seed, task)
· facts(task) · expert(benchmark, split, seed, task, variation, env_seed, max_steps) · close.

`benchmark` is MT10, MT25, MT50, ML10, ML25, ML45 or MT1/ML1 (those with `task`); `seed`
seeds the benchmark's variation draw (`metaworld.MT50(seed=...)`); variation k of a task is
the k-th of the benchmark's 50 `Task`s for that env name, in the benchmark's order.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np


class Worker:
    """Benchmarks built on demand (their 50 variations per task are drawn at construction,
    which resets every env 50 times), kept per (benchmark, split, seed, task)."""

    def __init__(self) -> None:
        self._benchmarks: dict[tuple[str, int, str], Any] = {}

    def _benchmark(self, benchmark: str, seed: int, task: str = "") -> Any:
        import metaworld

        key = (benchmark, seed, task if benchmark in ("MT1", "ML1") else "")
        if key not in self._benchmarks:
            cls = getattr(metaworld, benchmark, None)
            if not isinstance(cls, type) or not issubclass(cls, metaworld.Benchmark):
                raise ValueError(f"unknown Meta-World benchmark {benchmark!r}")
            args = (task,) if key[2] else ()
            self._benchmarks[key] = cls(*args, seed=seed)
        return self._benchmarks[key]

    def _split(self, benchmark: str, split: str, seed: int, task: str = "") -> tuple[Any, Any]:
        """(env classes, tasks) of the benchmark's train or test split."""
        bench = self._benchmark(benchmark, seed, task)
        if split not in ("train", "test"):
            raise ValueError(f"split must be train or test, not {split!r}")
        if split == "train":
            return bench.train_classes, bench.train_tasks
        return bench.test_classes, bench.test_tasks

    # -- commands -----------------------------------------------------------------------
    def versions(self) -> dict[str, Any]:
        from importlib.metadata import version

        return {p: version(p) for p in ("metaworld", "mujoco", "gymnasium", "numpy")}

    def tasks(self, benchmark: str, split: str = "train", seed: int = 0) -> dict[str, Any]:
        """The split's env names, in the benchmark's order."""
        classes, _ = self._split(benchmark, split, seed)
        return {"tasks": list(classes)}

    def variations(
        self, benchmark: str, task: str, split: str = "train", seed: int = 0
    ) -> dict[str, Any]:
        """The task's variations: rand_vec (K, d), the object/goal positions each fixes."""
        _, tasks = self._split(benchmark, split, seed, task)
        import pickle  # the package's own Task.data format, produced by the package itself

        vecs = [pickle.loads(t.data)["rand_vec"] for t in tasks if t.env_name == task]
        if not vecs:
            raise ValueError(f"{task!r} is not in {benchmark} {split}")
        return {"rand_vec": np.asarray(vecs, dtype=np.float64)}

    def facts(self, task: str, benchmark: str = "MT1", seed: int = 0) -> dict[str, Any]:
        """What metasim's importer must match, read from a live env of `task` after
        set_task(variation 0) and reset: the XML (path inside the package), timestep,
        frame_skip, action_scale, mocap bounds, max_path_length, model sizes, cameras,
        actuators, and the hand's start (tcp_center (3,)) and the variation's rand_vec."""
        import metaworld
        import mujoco

        classes, tasks = self._split(benchmark, "train", seed, task)
        env = classes[task]()
        try:
            env.set_task(next(t for t in tasks if t.env_name == task))
            env.reset()
            m = env.model
            names = lambda kind, n: [mujoco.mj_id2name(m, kind, i) for i in range(n)]  # noqa: E731
            root = os.path.dirname(os.path.abspath(metaworld.__file__))
            return {
                "xml": os.path.relpath(env.model_name, root),
                "timestep": float(m.opt.timestep),
                "frame_skip": int(env.frame_skip),
                "action_scale": float(env.action_scale),
                "mocap_low": np.asarray(env.mocap_low, dtype=np.float64),
                "mocap_high": np.asarray(env.mocap_high, dtype=np.float64),
                "max_path_length": int(env.max_path_length),
                "sizes": {k: int(getattr(m, k)) for k in ("nq", "nv", "nu", "nbody", "ngeom")},
                "cameras": names(mujoco.mjtObj.mjOBJ_CAMERA, m.ncam),
                "actuators": names(mujoco.mjtObj.mjOBJ_ACTUATOR, m.nu),
                "hand": np.asarray(env.tcp_center, dtype=np.float64),
                "rand_vec": np.asarray(env._last_rand_vec, dtype=np.float64),
                "size": [int(env.width), int(env.height)],
            }
        finally:
            env.close()

    def expert(
        self,
        benchmark: str,
        task: str,
        variation: int,
        split: str = "train",
        seed: int = 0,
        env_seed: int = 0,
        max_steps: int | None = None,
        until_success: bool = False,
    ) -> dict[str, Any]:
        """One episode of the package's scripted policy for `task` in the package's own
        loop: env.set_task(variation), env.seed(env_seed), reset, then
        policy.get_action(obs) -> env.step until truncation (max_path_length), `max_steps`,
        or with `until_success` the first success. success: info["success"] at any step;
        steps: the first such step (1-based, 0 when never)."""
        from metaworld.policies import ENV_POLICY_MAP

        classes, tasks = self._split(benchmark, split, seed, task)
        mine = [t for t in tasks if t.env_name == task]
        if not 0 <= variation < len(mine):
            raise ValueError(f"{task!r} has {len(mine)} variations, not index {variation}")
        env = classes[task]()
        try:
            env.set_task(mine[variation])
            env.seed(env_seed)
            policy = ENV_POLICY_MAP[task]()
            horizon = max_steps or int(env.max_path_length)
            return self._episode(env, policy, horizon, until_success)
        finally:
            env.close()

    @staticmethod
    def _episode(env: Any, policy: Any, horizon: int, until_success: bool) -> dict[str, Any]:
        start = time.perf_counter()
        obs, _ = env.reset()
        first, ran = 0, 0
        for ran in range(1, horizon + 1):
            obs, _, terminated, truncated, info = env.step(policy.get_action(obs))
            if info["success"] and not first:
                first = ran
            if terminated or truncated or (first and until_success):
                break
        return {
            "success": bool(first),
            "steps": first,
            "ran": ran,
            "seconds": time.perf_counter() - start,
            "max_path_length": int(env.max_path_length),
            "hand": np.asarray(env.tcp_center, dtype=np.float64),
        }


def commands() -> dict[str, Callable[..., dict[str, Any]]]:
    """The commands `metasim/sim/refwire.py` serves (it runs this file by path)."""
    worker = Worker()
    return {
        "versions": worker.versions,
        "tasks": worker.tasks,
        "variations": worker.variations,
        "expert": worker.expert,
        "facts": worker.facts,
    }
