"""The Meta-World reference: PyPI `metaworld==3.1.1` on its pinned MuJoCo 3.3.0 in its own
virtualenv (.cache/metaworld-ref, built on first use from PyPI), driven over a pipe.

metasim pins MuJoCo 4; installing metaworld into metasim's venv would downgrade it, so the
package lives in its own venv and runs in a subprocess (`worker.py`, JSON lines, arrays as
base64, never pickle), as LIBERO's reference does.

    with MetaWorldRef() as ref:
        names = ref.tasks("MT50")                          # the 50 env names, in order
        vecs = ref.variations("MT50", "reach-v3")          # (50, d) rand_vec per variation
        ep = ref.expert("MT50", "reach-v3", variation=3)   # the package's scripted policy
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

VENV = ROOT / ".cache" / "metaworld-ref"
WORKER = Path(__file__).with_name("worker.py")
# metaworld 3.1.1 pins mujoco==3.3.0 and needs gymnasium>=1.1; gymnasium's MuJoCo envs
# import `packaging` without declaring it (gymnasium 1.4.0), so it is named here.
REQUIREMENTS = ["metaworld==3.1.1", "mujoco==3.3.0", "gymnasium>=1.1", "packaging"]
MUJOCO = "3.3.0"
PROBE = "import metaworld, metaworld.policies, mujoco; print(mujoco.__version__)"
STAMP = "metasim-requirements.json"
PROBE_TIMEOUT = 120.0  # seconds for the venv's python to import metaworld


class MetaWorldRefError(RuntimeError):
    """The Meta-World reference could not be built, started, or answered with an error."""


def venv_python(venv: Path = VENV) -> Path:
    return venv / "bin" / "python"


def venv_ok(venv: Path = VENV) -> bool:
    """True when the venv exists, was built from REQUIREMENTS and imports metaworld on
    MuJoCo 3.3.0."""
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
        raise MetaWorldRefError(
            f"{py} did not import metaworld in {PROBE_TIMEOUT:g}s; delete {venv} to rebuild it"
        ) from None
    return probe.returncode == 0 and probe.stdout.split()[:1] == [MUJOCO]


def build_venv(venv: Path = VENV, python: str | None = None) -> float:
    """(Re)build the reference venv from PyPI; returns the seconds it took (about a minute
    the first time, a 36 MB wheel plus MuJoCo 3.3.0; pip's cache makes a rebuild fast).
    Raises MetaWorldRefError with pip's output when it fails (e.g. offline)."""
    start = time.perf_counter()
    shutil.rmtree(venv, ignore_errors=True)  # a half-built venv from an interrupted run
    try:
        subprocess.run([python or sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
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
        raise MetaWorldRefError(f"cannot build the Meta-World venv {venv}: {exc} {detail}") from exc
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
                raise MetaWorldRefError(f"{venv} was built but metaworld does not import")
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
    """The worker's environment: EGL for any rendering, one thread, no metasim on the path."""
    env = dict(os.environ)
    env.update(
        MUJOCO_GL="egl",
        PYOPENGL_PLATFORM="egl",
        OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.pop("PYTHONPATH", None)
    return env


class MetaWorldRef:
    """One worker process of the reference venv. Not thread-safe; one request at a time."""

    def __init__(
        self, python: Path | None = None, timeout: float = 600.0, startup: float = 120.0
    ) -> None:
        self.timeout = startup
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
            self._proc.kill()  # it does not answer
            self.close()
            raise MetaWorldRefError(
                f"the Meta-World worker gave no reply in {self.timeout:g}s"
            ) from None
        if line is None:
            raise MetaWorldRefError(
                f"the Meta-World worker exited: {one_line(self._stderr_tail())}"
            )
        try:
            reply = json.loads(line)
        except ValueError:
            self._proc.kill()
            self.close()
            raise MetaWorldRefError(f"the Meta-World worker sent no JSON: {line[:200]!r}") from None
        if not reply.pop("ok", False):
            raise MetaWorldRefError(f"Meta-World reference: {reply.get('error')}")
        return dict(decode(reply))

    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        """Send one request and wait for its reply."""
        if self._proc.poll() is not None or self._proc.stdin is None:
            raise MetaWorldRefError(f"the Meta-World worker is not running: {self._stderr_tail()}")
        self._proc.stdin.write(json.dumps({"cmd": cmd, **args}) + "\n")
        self._proc.stdin.flush()
        return self._reply()

    # -- commands -------------------------------------------------------------------------
    def versions(self) -> dict[str, str]:
        """metaworld, mujoco, gymnasium and numpy versions inside the reference venv."""
        return {k: str(v) for k, v in self.call("versions").items()}

    def tasks(self, benchmark: str = "MT50", split: str = "train", seed: int = 0) -> list[str]:
        """The env names of a benchmark split (e.g. "reach-v3"), in the benchmark's order."""
        return [
            str(t) for t in self.call("tasks", benchmark=benchmark, split=split, seed=seed)["tasks"]
        ]

    def variations(
        self, benchmark: str, task: str, split: str = "train", seed: int = 0
    ) -> np.ndarray:
        """The task's variations in the benchmark: rand_vec (K, d), K = 50; d and its
        meaning (object and goal positions) depend on the task."""
        reply = self.call("variations", benchmark=benchmark, task=task, split=split, seed=seed)
        return np.asarray(reply["rand_vec"])

    def facts(self, task: str) -> dict[str, Any]:
        """A live env's facts (see the worker's `facts`): xml (path inside the package),
        timestep, frame_skip, action_scale, mocap_low/high (3,), max_path_length, sizes,
        cameras, actuators, hand (3,), rand_vec, render size."""
        return self.call("facts", task=task)

    def expert(
        self,
        benchmark: str,
        task: str,
        variation: int,
        *,
        split: str = "train",
        seed: int = 0,
        env_seed: int = 0,
        max_steps: int | None = None,
        until_success: bool = False,
    ) -> dict[str, Any]:
        """One episode of the package's scripted policy in its own gymnasium loop (see the
        worker's `expert`; `until_success` ends it at the first success): success, steps
        (first success, 0 if none), ran, seconds, max_path_length, hand (3,) tool-centre
        position at the end."""
        return self.call(
            "expert",
            benchmark=benchmark,
            task=task,
            variation=variation,
            split=split,
            seed=seed,
            env_seed=env_seed,
            max_steps=max_steps,
            until_success=until_success,
        )

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

    def __enter__(self) -> MetaWorldRef:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
