"""A benchmark's reference simulator, declared once: `ReferenceSpec`, and `Reference`, the
client of one started worker of it.

A benchmark plug-in states the facts of its reference (the venv's folder and pins, the
probe that proves the venv imports, the worker module, the timeouts, the error class its
callers catch) and writes only its own commands; the venv (build, stamp, lock, probe) and
the worker process (pipe, codec, timeouts, one-line errors) are `refvenv`'s:

    SPEC = ReferenceSpec(
        requirements=("robosuite==1.4.0", "mujoco==3.17.0"),
        probe="import robosuite, mujoco; print(mujoco.__version__)",  # the pinned MuJoCo
        what="robosuite",
        error=RobosuiteRefError,
        name="robosuite",
        venv=project_cache("robosuite-ref"),
        worker=Path(__file__).with_name("worker.py"),
    )
    ensure_venv = SPEC.ensure_venv            # the public names the CLI and CI call

    class RobosuiteRef(Reference):
        spec = SPEC

        def load(self, task: str) -> dict[str, Any]:
            return self.ask("load", locals())   # sends task=task
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from metasim.reference import refvenv
from metasim.reference.refvenv import RefWorker, VenvSpec

# The MjModel element table (`metasim.reference.mjtable`), for a worker's `modules`.
TABLES = Path(__file__).with_name("mjtable.py")


@dataclass(frozen=True, kw_only=True)
class ReferenceSpec(VenvSpec):
    """One benchmark's reference simulator. On top of the venv's facts (`VenvSpec`:
    requirements, probe, `what` names the package in messages, `error`, the probe's
    `version` when it is not the pinned MuJoCo's):

    - `name`: the benchmark's name in messages (its worker's errors say "<name> reference",
      its LeRobot peer's "LeRobot <name> peer");
    - `venv`: the venv's folder (built there on first use);
    - `worker`: the worker module (runs in the venv, defines `commands()`), and `modules`,
      the worker-side modules handed to its `commands(*modules)` (refwire's doc);
    - `env`: variables added to the worker's environment;
    - `probe_timeout`: seconds for the venv's python to import the package; `timeout`:
      seconds per request; `startup`: seconds for the worker's imports.
    """

    name: str
    venv: Path
    worker: Path
    modules: tuple[Path, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    probe_timeout: float = 120.0
    timeout: float = 600.0
    startup: float = 120.0

    @property
    def label(self) -> str:
        """Names the worker in its errors."""
        return f"{self.name} reference"

    def venv_ok(self, venv: Path | None = None) -> bool:
        """True when the venv exists, was built from the requirements and its probe prints
        the expected version."""
        return refvenv.venv_ok(self, venv or self.venv, self.probe_timeout)

    def build_venv(self, venv: Path | None = None, python: str | None = None) -> float:
        """(Re)build the venv from the package index; returns the seconds it took."""
        return refvenv.build_venv(self, venv or self.venv, python)

    def ensure_venv(self, venv: Path | None = None) -> Path:
        """The venv's python, building the venv first if needed."""
        return refvenv.ensure_venv(self, venv or self.venv, self.probe_timeout)

    def worker_env(self, **extra: str) -> dict[str, str]:
        """The worker's environment: `refvenv.worker_env` with `env`, then `extra`."""
        return refvenv.worker_env(**{**self.env, **extra})


class Reference(RefWorker):
    """One started worker of the class's `spec` (a subclass sets it and adds its typed
    commands over `ask` / `call`). Not thread-safe; one request at a time."""

    spec: ClassVar[ReferenceSpec]

    def __init__(
        self, python: Path | None = None, timeout: float | None = None, startup: float | None = None
    ) -> None:
        spec = self.spec
        self.label, self.error = spec.label, spec.error
        super().__init__(
            python or spec.ensure_venv(),
            spec.worker,
            spec.worker_env(),
            spec.timeout if timeout is None else timeout,
            spec.startup if startup is None else startup,
            spec.modules,
        )


__all__ = ["TABLES", "Reference", "ReferenceSpec"]
