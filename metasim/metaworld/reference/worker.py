"""The Meta-World reference worker: runs INSIDE the reference venv (.cache/metaworld-ref:
metaworld 3.1.1 on MuJoCo 3.3.0, gymnasium >= 1.1), never in metasim's process, and must
not import metasim.

Served by `metasim/reference/refwire.py` (`python -P refwire.py worker.py envstate.py
mjtable.py`: JSON lines, arrays as base64, never pickle), as LIBERO's reference worker is;
it calls `commands(envstate, tables)` below.

Commands: versions · tasks(benchmark, split, seed) · variations(benchmark, split, seed, task)
· facts(task) · expert(benchmark, split, seed, task, variation, env_seed, max_steps)
· bench_steps(task, steps) · close (and the ops listed in `commands()`).

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

    def __init__(self, envstate: Any = None, tables: Any = None) -> None:
        self.es = envstate  # envstate.py and the element table, handed by refwire
        self.tables = tables
        self._benchmarks: dict[tuple[str, int, str], Any] = {}
        self._policies: dict[str, Any] = {}

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

    def _env(
        self, benchmark: str, split: str, seed: int, task: str, variation: int, **kwargs: Any
    ) -> Any:
        """A new env of `task` (constructor `kwargs`, e.g. render_mode) with variation k set:
        the k-th of the split's Tasks for that env name, as the package's loops do."""
        classes, tasks = self._split(benchmark, split, seed, task)
        mine = [t for t in tasks if t.env_name == task]
        if not 0 <= variation < len(mine):
            raise ValueError(f"{task!r} has {len(mine)} variations, not index {variation}")
        env = classes[task](**kwargs)
        env.set_task(mine[variation])
        return env

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

        env = self._env(benchmark, split, seed, task, variation)
        try:
            env.seed(env_seed)
            policy = ENV_POLICY_MAP[task]()
            horizon = max_steps or int(env.max_path_length)
            return self.es.episode(env, policy, horizon, until_success)
        finally:
            env.close()

    def init_states(
        self,
        task: str,
        benchmark: str = "MT50",
        split: str = "train",
        seed: int = 0,
        variations: list[int] | None = None,
        reuse: bool = True,
    ) -> dict[str, Any]:
        """The reset state of each variation (see `MetaWorldRef.init_states` for the
        format): set_task, reset(), as the package's loops do; with `reuse` one env takes
        every variation in turn (about 20 ms each, as the package's benchmark loops reuse
        an env), else a new env per variation, as `expert` does (about 0.3 s each; the
        states are the same: tests/metaworld/test_metaworld_ops.py)."""
        es = self.es
        ks = [int(k) for k in (variations if variations is not None else [0])]
        if not ks:
            raise ValueError("variations must name at least one variation index")
        rows, lives, sets = [], [], []
        shared = self._env(benchmark, split, seed, task, ks[0]) if reuse else None
        pristine = es.built_state(shared) if shared is not None else None
        _, tasks = self._split(benchmark, split, seed, task)
        mine = [t for t in tasks if t.env_name == task]
        for k in ks:
            start = time.perf_counter()
            if shared is not None:
                if not 0 <= k < len(mine):
                    raise ValueError(f"{task!r} has {len(mine)} variations, not index {k}")
                env = shared
                env.set_task(mine[k])
                assert pristine is not None
                es.as_built(env, pristine)
            else:
                env = self._env(benchmark, split, seed, task, k)
            try:
                before = es.numeric_attrs(env)
                obs, _ = env.reset()
                after = es.numeric_attrs(env)
                sets.append(es.attrs_set(before, after))
                lives.append(
                    {f: np.array(getattr(env.model, f)) for f in es.model_fields(env.model)}
                )
                rows.append(
                    es.reset_row(env, obs, after) | {"seconds": time.perf_counter() - start}
                )
                xml, model = env.model_name, env.model
            finally:
                if shared is None:
                    env.close()
        if shared is not None:
            shared.close()
        fresh = __import__("mujoco").MjModel.from_xml_path(xml)
        out: dict[str, Any] = {k: np.stack([r[k] for r in rows]) for k in rows[0] if k != "attrs"}
        out["attrs"] = es.stack_attrs([r["attrs"] for r in rows], set().union(*sets))
        out["model"] = es.model_changes(fresh, model, lives, self.tables)
        out["joints"] = es.joint_table(model)
        out["variations"] = ks
        out["max_path_length"] = int(env.max_path_length)
        return out

    def expert_actions(self, task: str, obs: Any) -> dict[str, Any]:
        """The package's scripted policy for `task` (`ENV_POLICY_MAP[task]()`, the one
        `expert` runs) on observations (B, 39): actions (B, 4) float64."""
        from metaworld.policies import ENV_POLICY_MAP

        if task not in self._policies:
            if task not in ENV_POLICY_MAP:
                raise ValueError(f"no scripted policy for {task!r}")
            self._policies[task] = ENV_POLICY_MAP[task]()
        policy = self._policies[task]
        # a writable copy per row: some policies edit the observation they are given, and
        # arrays decoded from the wire are read-only
        rows = np.array(obs, dtype=np.float64).reshape(-1, 39)
        acts = [np.asarray(policy.get_action(o.copy()), dtype=np.float64).reshape(4) for o in rows]
        return {"actions": np.array(acts).reshape(-1, 4)}

    def rollout(
        self,
        task: str,
        actions: Any,
        benchmark: str = "MT50",
        split: str = "train",
        seed: int = 0,
        variation: int = 0,
        camera: str | None = None,
        width: int = 480,
        height: int = 480,
    ) -> dict[str, Any]:
        """Reset variation k as `init_states` does, then env.step each action (T, 4); see
        `MetaWorldRef.rollout` for what comes back. With `camera` the env is built with
        render_mode="rgb_array", camera_name, width, height and renders once after reset."""
        es = self.es
        acts = np.asarray(actions, dtype=np.float64).reshape(-1, 4)
        kwargs = {}
        if camera is not None:
            kwargs = {
                "render_mode": "rgb_array",
                "camera_name": camera,
                "width": width,
                "height": height,
            }
        env = self._env(benchmark, split, seed, task, variation, **kwargs)
        try:
            if len(acts) > env.max_path_length:
                raise ValueError(
                    f"{len(acts)} actions: more than max_path_length {env.max_path_length}"
                )
            return self._roll(env, acts, es, camera is not None)
        finally:
            env.close()

    @staticmethod
    def _roll(env: Any, acts: Any, es: Any, render: bool) -> dict[str, Any]:
        import metaworld

        obs, _ = env.reset()
        frame = np.asarray(env.render(), dtype=np.uint8) if render else None
        robot = es.robot_bodies(env.model, os.path.dirname(os.path.abspath(metaworld.__file__)))
        frees = es.free_joints(env.model)
        snaps, success, contacts = [es.snapshot(env, frees) | {"obs": obs}], [], []
        for action in acts:
            obs, _, _, _, info = env.step(action)
            snaps.append(es.snapshot(env, frees) | {"obs": obs})
            success.append(bool(info["success"]))
            contacts.append(es.robot_contacts(env.model, env.data, robot))
        out: dict[str, Any] = {k: np.stack([s[k] for s in snaps]) for k in snaps[0]}
        out.update(
            success=np.array(success, dtype=bool),
            contact=np.array([bool(c) for c in contacts], dtype=bool),
            contacts=contacts,
            free_joints=[n for n, _ in frees],
        )
        if frame is not None:
            out["frame"] = frame
        return out

    def frame(self, task: str, camera: str, cam_pos: Any = None, **where: Any) -> dict[str, Any]:
        """frame (H, W, 3) uint8: env.render() of `camera` after reset (`where`: width, height,
        benchmark, split, seed, variation); `cam_pos` (3,) moves it first, as LeRobot does."""
        size = {"width": int(where.pop("width", 480)), "height": int(where.pop("height", 480))}
        bench, split = where.get("benchmark", "MT50"), where.get("split", "train")
        env = self._env(bench, split, int(where.get("seed", 0)), task,
                        int(where.get("variation", 0)), render_mode="rgb_array",
                        camera_name=camera, **size)  # fmt: skip
        try:
            if cam_pos is not None:
                env.model.cam_pos[env.model.camera(camera).id] = np.asarray(cam_pos).reshape(3)
            env.reset()
            return {"frame": np.asarray(env.render(), dtype=np.uint8)}
        finally:
            env.close()

    def evaluate(
        self,
        task: str,
        states: dict[str, Any],
        benchmark: str = "MT50",
        split: str = "train",
        seed: int = 0,
        variation: int = 0,
    ) -> dict[str, Any]:
        """The package's `evaluate_state` on given states; see `MetaWorldRef.evaluate`."""
        env = self._env(benchmark, split, seed, task, variation)
        try:
            env.reset()
            rows = {k: np.asarray(v, dtype=np.float64) for k, v in states.items()}
            infos = [
                self._judge(env, {k: v[i] for k, v in rows.items()})
                for i in range(len(rows["qpos"]))
            ]
        finally:
            env.close()
        keys = sorted(infos[0]) if infos else []
        return {k: np.array([info[k] for info in infos], dtype=np.float64) for k in keys}

    @staticmethod
    def _judge(env: Any, row: dict[str, Any]) -> dict[str, Any]:
        """Set one state (qpos, qvel; mocap_pos/quat and target_pos when given), forward,
        build the clipped observation as `step` does and call evaluate_state with a zero
        action."""
        d = env.data
        qvel = row.get("qvel", np.zeros(env.model.nv))
        if "mocap_pos" in row:
            d.mocap_pos[:] = row["mocap_pos"].reshape(d.mocap_pos.shape)
        if "mocap_quat" in row:
            d.mocap_quat[:] = row["mocap_quat"].reshape(d.mocap_quat.shape)
        if "target_pos" in row:
            env._target_pos = row["target_pos"].reshape(3).copy()
        env.set_state(row["qpos"], qvel)  # qpos, qvel, then mj_forward
        for site in env._target_site_config:
            env._set_pos_site(*site)
        obs = env._get_obs()
        obs[18:36] = obs[:18]  # no previous frame: as reset leaves it
        space = env.sawyer_observation_space
        obs = np.clip(obs, space.low, space.high)
        reward, info = env.evaluate_state(obs, np.zeros(4, dtype=np.float32))
        return {**{k: float(v) for k, v in info.items()}, "reward": float(reward), "obs": obs}

    def bench_steps(
        self, task: str, steps: int, benchmark: str = "MT1", variation: int = 0, seed: int = 0
    ) -> dict[str, Any]:
        """Seconds for `steps` env.step calls with uniform random actions (seeded) in the
        package's own gymnasium loop, resetting at truncation; the reset before the timed
        loop is not counted, resets inside it are (as in an evaluation loop)."""
        env = self._env(benchmark, "train", 0, task, variation)
        try:
            acts = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(int(steps), 4))
            return {"seconds": self.es.timed_steps(env, acts), "steps": int(steps)}
        finally:
            env.close()


def commands(envstate: Any, tables: Any) -> dict[str, Callable[..., dict[str, Any]]]:
    """The commands `metasim/reference/refwire.py` serves (it runs this file by path and
    hands it envstate.py and the kit's element table, mjtable.py)."""
    worker = Worker(envstate, tables)
    return {
        "versions": worker.versions,
        "tasks": worker.tasks,
        "variations": worker.variations,
        "expert": worker.expert,
        "facts": worker.facts,
        "init_states": worker.init_states,
        "expert_actions": worker.expert_actions,
        "rollout": worker.rollout,
        "evaluate": worker.evaluate,
        "bench_steps": worker.bench_steps,
        "frame": worker.frame,
    }
