"""The client of a LeRobot peer (the peer-code convention tests): LeRobot's own env
for a benchmark, run in the benchmark's reference venv with the peer layer
(`metasim.reference.peerlayer`) on its worker's path, driven over a pipe.

A benchmark declares its peer as a subclass naming its reference (`spec`: the venv, the
error class, the name in messages) and its action size, and adds its own `make`; its
harness (the worker module: `commands(peerwire, worker)`, see
`metasim/reference/peerwire.py`) is `lerobot_peer.py` next to the reference's worker:

    class LeRobotToyPeer(LeRobotPeer):
        spec = SPEC                                   # the benchmark's ReferenceSpec
        action_dim = 7

        def make(self, task: str, seed: int = 0) -> dict[str, Any]:
            return self.ask("make", locals())
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from metasim.reference import peerlayer
from metasim.reference.refvenv import RefWorker
from metasim.reference.spec import ReferenceSpec

PEERWIRE = Path(__file__).with_name("peerwire.py")


class LeRobotPeer(RefWorker):
    """One worker process running LeRobot's env for `spec`'s benchmark. Not thread-safe."""

    spec: ClassVar[ReferenceSpec]
    action_dim: ClassVar[int]

    def __init__(
        self,
        python: Path | None = None,
        layer: Path | None = None,
        timeout: float = 600.0,
        startup: float = 300.0,
    ) -> None:
        spec, layer = self.spec, layer or peerlayer.ensure_layer()
        self.label, self.error = f"LeRobot {spec.name} peer", spec.error
        env = spec.worker_env(PEER_PATH=str(layer), **self.peer_env(layer))
        harness = spec.worker.with_name("lerobot_peer.py")
        python = python or spec.ensure_venv()
        super().__init__(python, harness, env, timeout, startup, (PEERWIRE, spec.worker))

    def peer_env(self, layer: Path) -> dict[str, str]:
        """Variables the harness needs in its environment, besides `PEER_PATH` (none)."""
        return {}

    def step(self, action: np.ndarray) -> dict[str, Any]:
        """One (action_dim,) policy action through LeRobot's env postprocessor and env.step:
        sent, obs, terminated, and what the benchmark's harness adds."""
        dim = self.action_dim
        return self.call("step", action=np.asarray(action, dtype=np.float32).reshape(dim))


__all__ = ["PEERWIRE", "LeRobotPeer"]
