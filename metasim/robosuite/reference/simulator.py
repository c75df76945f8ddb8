"""The robosuite reference simulator: robosuite 1.4.0 on MuJoCo 3.17 in LIBERO's reference
venv (.cache/libero-ref, which pins robosuite==1.4.0: one venv for both benchmarks), driven
over a pipe (`worker.py`, JSON lines). A thin client: its commands are the worker's.

    with RobosuiteRef() as ref:
        ref.load("Lift", seed=0)                 # suite.make(..., OSC_POSE), np.random seeded
        xml = ref.call("export")["xml"]          # robosuite's own MJCF of the model
        rec = ref.call("record", seeds=[0, 1])   # its reset distribution, row per seed
        ok = ref.call("successes", qpos=..., qvel=...)["success"]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metasim.libero.reference.simulator import VENV, ensure_venv
from metasim.reference import refvenv
from metasim.reference.refvenv import RefWorker

WORKER = Path(__file__).with_name("worker.py")


class RobosuiteRefError(RuntimeError):
    """The robosuite reference could not be started, or answered with an error."""


class RobosuiteRef(RefWorker):
    """One robosuite env in a worker process. Not thread-safe; one request at a time."""

    label = "robosuite reference"
    error = RobosuiteRefError

    def __init__(self, timeout: float = 600.0, startup: float = 120.0) -> None:
        env = refvenv.worker_env(LIBERO_CONFIG_PATH=str(VENV.parent / "libero-ref-config"))
        super().__init__(ensure_venv(), WORKER, env, timeout, startup)

    def load(self, task: str, seed: int = 0, placed: list[str] | None = None) -> dict[str, Any]:
        """Build `task` (np.random seeded by `seed`); `placed`: jointless bodies whose
        poses robosuite's reset sets (part of every state)."""
        return self.call("load", task=task, seed=seed, placed=list(placed or []))


def probe_reference() -> dict[str, Any]:
    """Start the worker, ask for its versions, close it."""
    with RobosuiteRef() as ref:
        return dict(ref.call("versions"))
