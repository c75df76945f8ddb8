"""A benchmark's reference simulator in its own virtualenv, driven over a pipe: the venv
builder (stamp + import probe, a file lock between builders) and the JSON-lines client
(`RefWorker`). Shared by the benchmark plug-ins (LIBERO's robosuite on MuJoCo 3.17,
Meta-World's package on MuJoCo 3.3.0), each of which pins a MuJoCo other than metasim's,
so its package never goes into metasim's venv.

The worker side is `metasim/reference/refwire.py` (stdlib + numpy, run inside the other venv);
a plug-in's worker module only defines `commands()`. A plug-in declares its reference once,
as a `metasim.reference.spec.ReferenceSpec`, which builds on this module.
"""

from __future__ import annotations

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
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from metasim.errors import one_line
from metasim.reference.refwire import decode, encode

WIRE = Path(__file__).with_name("refwire.py")
STAMP = "metasim-requirements.json"


@dataclass(frozen=True, kw_only=True)
class VenvSpec:
    """What a reference venv holds. `probe` is Python code whose output's first word must
    be `version` (by default the MuJoCo the requirements pin, `mujoco==X`); `what` names
    the package in messages."""

    requirements: tuple[str, ...]
    probe: str
    what: str
    error: type[RuntimeError]
    version: str = ""

    def expected(self) -> str:
        """The first word the probe must print (see the class doc)."""
        pins = [r.split("==", 1)[1] for r in self.requirements if r.startswith("mujoco==")]
        if not (self.version or pins):
            raise ValueError(f"{self.what}: no version and no mujoco== pin to probe for")
        return self.version or pins[0]


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def venv_ok(spec: VenvSpec, venv: Path, timeout: float) -> bool:
    """True when the venv exists, was built from the spec's requirements and its probe
    prints the expected version within `timeout` seconds (a hung one raises)."""
    py, stamp = venv_python(venv), venv / STAMP
    if not py.exists() or not stamp.exists():
        return False
    try:
        if json.loads(stamp.read_text()) != list(spec.requirements):
            return False
        probe = subprocess.run(
            [str(py), "-c", spec.probe], capture_output=True, text=True, timeout=timeout
        )
    except (OSError, ValueError):  # an unreadable or damaged stamp: rebuild
        return False
    except subprocess.TimeoutExpired:
        raise spec.error(
            f"{py} did not finish importing {spec.what} in {timeout:g}s (a hung interpreter); "
            f"delete {venv} to rebuild it"
        ) from None
    return probe.returncode == 0 and probe.stdout.split()[:1] == [spec.expected()]


def build_venv(spec: VenvSpec, venv: Path, python: str | None = None) -> float:
    """(Re)build the venv from PyPI with `python` (metasim's own interpreter by default);
    returns the seconds it took (pip's cache makes a rebuild fast). Raises the spec's error
    with pip's output when it fails (e.g. offline)."""
    start = time.perf_counter()
    shutil.rmtree(venv, ignore_errors=True)  # a half-built venv from an interrupted run
    try:
        subprocess.run([python or sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        subprocess.run(
            [str(venv_python(venv)), "-m", "pip", "install", "-q", *spec.requirements],
            check=True,
            timeout=1800,
            capture_output=True,
            text=True,
        )
        (venv / STAMP).write_text(json.dumps(list(spec.requirements)))
    except (subprocess.SubprocessError, OSError) as exc:
        shutil.rmtree(venv, ignore_errors=True)
        detail = one_line((getattr(exc, "stderr", None) or "")[-1500:])
        raise spec.error(f"cannot build the {spec.what} venv {venv}: {exc} {detail}") from exc
    return time.perf_counter() - start


def ensure_venv(spec: VenvSpec, venv: Path, timeout: float) -> Path:
    """The venv's python, building the venv first if needed (one builder at a time: a file
    lock next to it)."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not venv_ok(spec, venv, timeout):
            build_venv(spec, venv)
            if not venv_ok(spec, venv, timeout):
                raise spec.error(f"{venv} was built but {spec.what} does not import")
    return venv_python(venv)


def worker_env(**extra: str) -> dict[str, str]:
    """A worker's environment: EGL for any rendering, one thread (unless OMP_NUM_THREADS is
    set), no metasim on the path, then `extra` (which may override any of these)."""
    env = dict(os.environ)
    env.update(
        MUJOCO_GL="egl",
        PYOPENGL_PLATFORM="egl",
        OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.update(extra)
    env.pop("PYTHONPATH", None)
    return env


class RefWorker:
    """One worker process (`python -P refwire.py worker [modules]`) answering JSON lines. Not
    thread-safe; one request at a time. `label` names it in errors, which are `error`;
    `modules` are handed to the worker's `commands()` (refwire's doc)."""

    label = "reference"
    error: type[RuntimeError] = RuntimeError

    def __init__(
        self,
        python: Path,
        worker: Path,
        env: dict[str, str],
        timeout: float,
        startup: float,
        modules: tuple[Path, ...] = (),
    ) -> None:
        self.timeout = startup  # the worker's imports (and EGL set-up), then `timeout` per call
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        self._proc = subprocess.Popen(
            [str(python), "-P", str(WIRE), str(worker), *map(str, modules)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env,
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

    def _give_up(self, message: str) -> RuntimeError:
        """Kill the worker (asking it to close would wait 30 s more) and the error to raise."""
        self._proc.kill()
        self.close()
        return self.error(message)

    def _reply(self) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            raise self._give_up(f"the {self.label} gave no reply in {self.timeout:g}s") from None
        if line is None:
            raise self.error(f"the {self.label} worker exited: {one_line(self._stderr_tail())}")
        try:
            reply = json.loads(line)
        except ValueError:
            raise self._give_up(f"the {self.label} worker sent no JSON: {line[:200]!r}") from None
        if not reply.pop("ok", False):
            raise self.error(f"{self.label}: {reply.get('error')}")
        return dict(decode(reply))

    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        """Send one request (numpy arrays in `args` encoded) and wait for its reply."""
        if self._proc.poll() is not None or self._proc.stdin is None:
            raise self.error(f"the {self.label} worker is not running: {self._stderr_tail()}")
        self._proc.stdin.write(json.dumps({"cmd": cmd, **encode(args)}) + "\n")
        self._proc.stdin.flush()
        return self._reply()

    def ask(self, cmd: str, args: dict[str, Any]) -> dict[str, Any]:
        """`call(cmd, **args)` without `self`: a typed command that sends its own parameters
        states them once, in its signature (`return self.ask("load", locals())`, after
        converting any parameter in place)."""
        return self.call(cmd, **{k: v for k, v in args.items() if k != "self"})

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

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
