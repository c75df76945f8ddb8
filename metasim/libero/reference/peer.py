"""The peers' own LIBERO harness code run in the LIBERO reference venv, driven over a pipe
(the peer-code convention test): LeRobot's LIBERO env
(`lerobot.envs.libero.LiberoEnv`, its `preprocess_observation` and env processors, LeRobot
0.4.4), the peer of metasim's `lerobot_libero` preset; and openpi's LIBERO client
(`examples/libero/main.py`, from a fetched source never copied into metasim, see
`openpi_peer.py`), the peer of `openpi_libero`.

torch and lerobot come from the peer layer (`metasim.reference.peerlayer`, built on first use),
appended to the worker's `sys.path`; the reference venv itself is unchanged.

    with LeRobotLiberoPeer() as peer:
        reset = peer.make("libero_goal", 3, init=7, seed=11)  # LiberoEnv, reset
        step = peer.step(action)                               # (7,) policy action

    with OpenpiLiberoPeer(openpi_source(fetched, tmp)) as peer:
        got = peer.run("libero_goal", 3, init=7, chunks=chunks, out=tmp)
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from metasim.libero.reference.simulator import SPEC, RefSimError
from metasim.reference.peer import LeRobotPeer
from metasim.reference.refvenv import RefWorker


class LeRobotLiberoPeer(LeRobotPeer):
    """One worker process running LeRobot's LIBERO env. Not thread-safe."""

    spec = SPEC
    action_dim = 7

    def peer_env(self, layer: Path) -> dict[str, str]:
        """LIBERO's config points at the peer's init-state files (the harness's doc)."""
        folder = str(layer.parent / f"{layer.name}-libero")
        return {"LIBERO_CONFIG_PATH": folder, "PEER_LIBERO_DIR": folder}

    def make(self, suite: str, task: int, init: int = 0, seed: int = 0) -> dict[str, Any]:
        """LeRobot's env for the task, reset at LIBERO init state `init` with `seed` (see
        the harness's `make`): obs, info, init_qpos, init_qvel, state, controller. `step`
        replies add controller and success."""
        return self.ask("make", locals())


OPENPI_WORKER = Path(__file__).with_name("openpi_peer.py")
# The files of openpi's repository the openpi peer runs (main.py imports openpi_client).
OPENPI_FILES = (
    "examples/libero/main.py",
    "packages/openpi-client/src/openpi_client/__init__.py",
    "packages/openpi-client/src/openpi_client/image_tools.py",
)


def openpi_source(where: Path, into: Path) -> Path | None:
    """A folder with openpi's files (`OPENPI_FILES`) from `where`: a checkout (used in
    place), or a git directory (bare or not) whose HEAD's files are written under `into`
    (a temporary folder, never the repository). None when `where` holds neither."""
    if all((where / f).is_file() for f in OPENPI_FILES):
        return where
    for name in OPENPI_FILES:
        try:
            text = subprocess.run(
                ["git", f"--git-dir={where}", "show", f"HEAD:{name}"],
                check=True,
                capture_output=True,
                timeout=60,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        (into / name).write_bytes(text)
    return into


class OpenpiLiberoPeer(RefWorker):
    """One worker process running openpi's `examples/libero/main.py` from `source` (a
    folder `openpi_source` gave) with a recording client. Not thread-safe."""

    label = "openpi LIBERO peer"
    error = RefSimError

    def __init__(self, source: Path, python: Path | None = None, timeout: float = 600.0) -> None:
        env = SPEC.worker_env(OPENPI_SRC=str(source))  # LIBERO's config folder, kept empty
        super().__init__(python or SPEC.ensure_venv(), OPENPI_WORKER, env, timeout, 300.0)

    def run(
        self, suite: str, task: int, init: int, chunks: np.ndarray, out: Path
    ) -> dict[str, Any]:
        """openpi's loop on one episode (init state `init`) until it asks for chunk
        len(chunks) + 1: elements (N + 1 dicts main.py sent), steps (the env.step
        arguments, settle steps first), start (init (1 + nq + nv,), body_xpos/xquat after
        set_init_state), info (bodies, fixtures -> root body)."""
        return self.call(
            "run", suite=suite, task=task, init=init, chunks=list(chunks), out=str(out)
        )
