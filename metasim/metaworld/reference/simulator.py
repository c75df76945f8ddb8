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

from pathlib import Path
from typing import Any

import numpy as np

from metasim.paths import ROOT
from metasim.sim import refvenv
from metasim.sim.refvenv import RefWorker, VenvSpec

VENV = ROOT / ".cache" / "metaworld-ref"
WORKER = Path(__file__).with_name("worker.py")
# metaworld 3.1.1 pins mujoco==3.3.0 and needs gymnasium>=1.1; gymnasium's MuJoCo envs
# import `packaging` without declaring it (gymnasium 1.4.0), so it is named here.
REQUIREMENTS = ["metaworld==3.1.1", "mujoco==3.3.0", "gymnasium>=1.1", "packaging"]
MUJOCO = "3.3.0"
PROBE = "import metaworld, metaworld.policies, mujoco; print(mujoco.__version__)"
STAMP = refvenv.STAMP
PROBE_TIMEOUT = 120.0  # seconds for the venv's python to import metaworld


class MetaWorldRefError(RuntimeError):
    """The Meta-World reference could not be built, started, or answered with an error."""


SPEC = VenvSpec(tuple(REQUIREMENTS), PROBE, MUJOCO, "metaworld", MetaWorldRefError)


def venv_ok(venv: Path = VENV) -> bool:
    """True when the venv exists, was built from REQUIREMENTS and imports metaworld on
    MuJoCo 3.3.0."""
    return refvenv.venv_ok(SPEC, venv, PROBE_TIMEOUT)


def build_venv(venv: Path = VENV, python: str | None = None) -> float:
    """(Re)build the reference venv from PyPI; returns the seconds it took (about a minute
    the first time, a 36 MB wheel plus MuJoCo 3.3.0)."""
    return refvenv.build_venv(SPEC, venv, python)


def ensure_venv(venv: Path = VENV) -> Path:
    """The reference venv's python, building the venv first if needed."""
    return refvenv.ensure_venv(SPEC, venv, PROBE_TIMEOUT)


class MetaWorldRef(RefWorker):
    """One worker process of the reference venv. Not thread-safe; one request at a time."""

    label = "Meta-World reference"
    error = MetaWorldRefError

    def __init__(
        self, python: Path | None = None, timeout: float = 600.0, startup: float = 120.0
    ) -> None:
        super().__init__(python or ensure_venv(), WORKER, refvenv.worker_env(), timeout, startup)

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
