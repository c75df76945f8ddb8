"""Which LIBERO tasks MJX (mujoco-mjx, impl="jax") can simulate, and what blocks the rest.

For one task (`classify`): import it (`metasim.libero.importer.scene.load_task`), compile it with
MuJoCo 4, build the model the mjx backend would simulate (`metasim.sim.mjx.support.
physics_model`: cylinder collision stand-ins included), then

1. the static check: every geom-type pair the model can produce that MJX has no
   collision function for (aggregated per type pair, with one example pair of geoms), and
   the solver options and flex elements MJX refuses;
2. if that passes, `mjx.put_model` on that model, time-bounded (it builds convex hulls of
   the collision meshes and refuses more features: margins on meshes, actuator,
   equality, sensor and wrap types, contact sensors);
3. optionally (`jit_step`, run in a child process by `step_bounded` so a compile that
   never ends can be killed): trace, compile and run one `jax.jit(mjx.step)` on the CPU.

Nothing here runs the LIBERO controller: LIBERO drives the Panda with torque actuators
and `osc_pose` computed on the host every physics substep, which the mjx backend does not
do (see docs/support_matrix.md). The matrix says whether MJX can simulate the physics.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import mujoco
import numpy as np
from mujoco.mjx._src import collision_driver

from metasim.libero.importer import scene as libero_scene
from metasim.scene.compile import CompiledScene, compile_scene
from metasim.sim.mjx import support

# Statuses, from worst to best.
IMPORT_ERROR = "import error"  # the task did not import or compile (a metasim bug)
BLOCKED = "blocked"  # the static check names what MJX cannot simulate
PUT_MODEL_ERROR = "put_model refused"  # mjx.put_model raised
PUT_MODEL_TIMEOUT = "put_model timed out"
LOADS = "loads"  # mjx.put_model succeeded; no step tried
STEP_TIMEOUT = "step compile timed out"  # put_model ok, one jitted step did not finish
STEP_ERROR = "step failed"
STEPS = "steps"  # one jitted mjx.step compiled and ran, finite
STATUSES = (IMPORT_ERROR, BLOCKED, PUT_MODEL_ERROR, PUT_MODEL_TIMEOUT, LOADS, STEP_TIMEOUT,
            STEP_ERROR, STEPS)  # fmt: skip


def type_name(t: int) -> str:
    """`mujoco.mjtGeom` value -> "box", "mesh", ..."""
    return mujoco.mjtGeom(int(t)).name.removeprefix("mjGEOM_").lower()


def pair_key(m: mujoco.MjModel, g1: int, g2: int) -> str:
    """The geom-type pair of geoms g1, g2 as "box/cylinder" (types in mjtGeom order)."""
    a, b = sorted((int(m.geom_type[g1]), int(m.geom_type[g2])))
    return f"{type_name(a)}/{type_name(b)}"


@dataclass
class StepResult:
    """One jitted `mjx.step` on the CPU (seconds; None where it did not get that far)."""

    status: str  # STEPS, STEP_TIMEOUT or STEP_ERROR
    timeout_s: float
    trace_s: float | None = None
    compile_s: float | None = None
    run_s: float | None = None
    peak_rss_mb: float | None = None  # the child's peak memory at its last report
    error: str = ""


@dataclass
class TaskRow:
    """One task's line in the matrix."""

    suite: str
    index: int
    name: str
    status: str
    blocking: dict[str, int] = field(default_factory=dict)  # "box/ellipsoid" -> geom pairs
    examples: dict[str, str] = field(default_factory=dict)  # type pair -> "geom .. against .."
    other: list[str] = field(default_factory=list)  # reasons that are not geom pairs
    stand_ins: list[str] = field(default_factory=list)  # cylinders simulated as prisms
    geom_pairs: int = 0  # geom pairs MJX would test for collision
    pair_types: dict[str, int] = field(default_factory=dict)  # type pair -> geom pairs
    collision_meshes: int = 0  # distinct meshes in those pairs (MJX builds convex hulls)
    collision_mesh_vertices: int = 0
    max_contacts: int | None = None  # contact slots in mjx.Data (from put_model's model)
    put_model_s: float | None = None
    mjx_warnings: list[str] = field(default_factory=list)
    step: StepResult | None = None

    @property
    def ref(self) -> str:
        return f"libero:{self.suite}/{self.index}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> TaskRow:
        step = raw.get("step")
        return cls(**{**raw, "step": StepResult(**step) if step else None})


class _Timeout(Exception):
    pass


@contextmanager
def _time_bound(seconds: float) -> Iterator[None]:
    """Raise `_Timeout` in this (main) thread after `seconds`. Interrupts Python code only:
    `put_model` is numpy and trimesh from Python, so it is interruptible between calls."""

    def fire(signum: int, frame: object) -> None:
        raise _Timeout

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def compile_task(suite: str, index: int) -> tuple[str, CompiledScene]:
    """(task name, compiled scene) of LIBERO task `index` of `suite`."""
    task = libero_scene.load_task(f"libero:{suite}/{index}")
    return task.task, compile_scene(task.scene)


def static_check(row: TaskRow, phys: support.PhysicsModel) -> None:
    """Fill `row`'s pair counts, blocking pairs, other reasons and mesh figures from the
    model MJX would simulate (no MJX call)."""
    m = phys.model
    pairs = [(int(a), int(b)) for a, b, _ in collision_driver.geom_pairs(m)]
    row.geom_pairs = len(pairs)
    row.pair_types = dict(collections.Counter(pair_key(m, a, b) for a, b in pairs))
    meshes = {int(m.geom_dataid[g]) for p in pairs for g in p if m.geom_type[g] == support.MESH}
    row.collision_meshes = len(meshes)
    row.collision_mesh_vertices = int(sum(m.mesh_vertnum[i] for i in meshes))
    row.stand_ins = [s.label for s in phys.stand_ins]
    blocking: collections.Counter[str] = collections.Counter()
    for g1, g2 in support.unsupported_pairs(m):
        key = pair_key(m, g1, g2)
        blocking[key] += 1
        row.examples.setdefault(
            key, f"{support.geom_label(m, g1)} against {support.geom_label(m, g2)}"
        )
    for g1, g2, margin in support.mesh_margin_pairs(m):
        key = f"{pair_key(m, g1, g2)} margin"
        blocking[key] += 1
        row.examples.setdefault(
            key,
            f"{support.geom_label(m, g1)} against {support.geom_label(m, g2)}: margin {margin:g}",
        )
    row.blocking = dict(blocking)
    row.other = support.unsupported_options(m)


def try_put_model(row: TaskRow, m: mujoco.MjModel, timeout_s: float) -> Any:
    """`mjx.put_model(m)` within `timeout_s`; sets `row.status` (LOADS or a failure) and
    returns the mjx.Model (None on failure)."""
    from mujoco import mjx

    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught, _time_bound(timeout_s):
            warnings.simplefilter("always")
            mx = mjx.put_model(m, impl="jax")
    except _Timeout:
        row.status = PUT_MODEL_TIMEOUT
        row.other.append(f"mjx.put_model did not finish in {timeout_s:g} s")
        return None
    except (NotImplementedError, ValueError) as exc:
        row.status = PUT_MODEL_ERROR
        row.other.append(f"mjx.put_model: {type(exc).__name__}: {exc}")
        return None
    row.put_model_s = round(time.perf_counter() - start, 2)
    row.mjx_warnings = sorted({str(w.message).split(". ")[0] for w in caught})
    row.status = LOADS
    return mx


def classify(
    suite: str,
    index: int,
    put_timeout_s: float = 120.0,
    cylinder_sides: int = support.CYLINDER_SIDES,
) -> TaskRow:
    """The matrix row of one task without a step (status IMPORT_ERROR, BLOCKED,
    PUT_MODEL_ERROR, PUT_MODEL_TIMEOUT or LOADS). `cylinder_sides=0` turns the cylinder
    stand-ins off, as `launch(..., cylinder_sides=0)` does."""
    try:
        name, compiled = compile_task(suite, index)
    except Exception as exc:  # recorded in the matrix, not raised: the sweep goes on
        return TaskRow(suite, index, "?", IMPORT_ERROR, other=[f"{type(exc).__name__}: {exc}"])
    row = TaskRow(suite, index, name, BLOCKED)
    phys = support.physics_model(compiled, cylinder_sides, "jax")
    static_check(row, phys)
    if row.blocking or row.other:
        return row
    mx = try_put_model(row, phys.model, put_timeout_s)
    if mx is not None:
        from mujoco import mjx

        row.max_contacts = int(mjx.make_data(mx, impl="jax")._impl.contact.dist.shape[0])
    return row


def jit_step(suite: str, index: int, report: Any = print) -> StepResult:
    """Trace, compile (cold: no persistent cache) and run one `jax.jit(mjx.step)` of the
    task's MJX model in float64 on the CPU, from the model's default state. `report`
    receives a JSON line after each stage (the child process prints them, so a parent
    that kills it on a timeout still knows how far it got)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    from mujoco import mjx

    _, compiled = compile_task(suite, index)
    phys = support.physics_model(compiled)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mx = mjx.put_model(phys.model, impl="jax")
    d = mjx.make_data(mx, impl="jax")
    out = StepResult(STEP_TIMEOUT, 0.0)
    start = time.perf_counter()
    lowered = jax.jit(mjx.step).lower(mx, d)
    out.trace_s = round(time.perf_counter() - start, 1)
    report(json.dumps({"trace_s": out.trace_s, "peak_rss_mb": _peak_rss_mb()}))
    start = time.perf_counter()
    step = lowered.compile()
    out.compile_s = round(time.perf_counter() - start, 1)
    report(json.dumps({"compile_s": out.compile_s, "peak_rss_mb": _peak_rss_mb()}))
    start = time.perf_counter()
    qpos = np.asarray(jax.block_until_ready(step(mx, d)).qpos)
    out.run_s = round(time.perf_counter() - start, 3)
    out.peak_rss_mb = _peak_rss_mb()
    out.status = STEPS if np.isfinite(qpos).all() else STEP_ERROR
    out.error = "" if out.status == STEPS else "non-finite qpos after one step"
    report(json.dumps(asdict(out)))
    return out


def step_bounded(suite: str, index: int, timeout_s: float) -> StepResult:
    """`jit_step` in a child Python process, killed after `timeout_s` (an XLA compile
    cannot be interrupted from Python); the stages it finished are kept."""
    code = f"from metasim.libero.checks.mjx_matrix import jit_step; jit_step({suite!r}, {index})"
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True,
            timeout=timeout_s, env=env,
        )  # fmt: skip
        stdout, failed = done.stdout, done.returncode != 0
        error = _failure(done.returncode, done.stderr) if failed else ""
    except subprocess.TimeoutExpired as exc:
        raw = exc.stdout or b""
        stdout, failed, error = raw.decode() if isinstance(raw, bytes) else raw, False, ""
    result = StepResult(STEP_TIMEOUT, timeout_s)
    for line in stdout.splitlines():
        if line.startswith("{"):
            for key, value in json.loads(line).items():
                setattr(result, key, value)
    result.timeout_s = timeout_s
    if failed:
        result.status, result.error = STEP_ERROR, error
    return result


def _peak_rss_mb() -> float:
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0)


def _failure(returncode: int, stderr: str) -> str:
    """Why the child failed: the signal that killed it (SIGKILL from outside is usually
    the kernel's out-of-memory killer), or its last error line (not XLA's banners)."""
    if returncode < 0:
        return f"killed by {signal.Signals(-returncode).name} (out of memory?)"
    lines = [x for x in stderr.strip().splitlines() if x.strip() and set(x.strip()) != {"*"}]
    return (lines[-1] if lines else f"exit status {returncode}")[:300]
