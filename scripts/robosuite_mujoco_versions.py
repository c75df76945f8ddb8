"""Control experiment: does a robosuite replay part from metasim's run because of the
model, the controller, or MuJoCo itself? The SAME model (robosuite's own XML) in MuJoCo
3.17 (the reference venv) and 4.0 (metasim's), the same start state and the same ctrl of
every physics substep (robosuite's controller's, recorded in the reference), open-loop.

    PYTHONPATH=$PWD .venv/bin/python scripts/robosuite_mujoco_versions.py \
        [--task Door] [--episode 2] [--no-nativeccd] [--out FILE.json]

The expert's metasim episode is run (`checks/xcheck.run_metasim`), replayed in robosuite
from its start state, controller included (`trace`: per substep time, qpos, qvel, the
solver's warm start and ctrl); then this file, run with `--replay` by each venv's Python
(numpy and mujoco only), compiles the XML, writes the start state and steps the recorded
ctrl. Printed: the first substep whose qpos differ by more than 1e-6 between the
versions, the contacts of both there, and the largest and final differences. With
`--no-nativeccd` both run with `mjDSBL_NATIVECCD` (libccd). Measured (docs/robosuite.md,
"Listed differences"): Door episode 2 parts at substep 2096, where a finger mesh first
touches the handle box (4.0: that pair twice); with libccd it agrees to 1.2e-11 throughout.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ATOL = 1e-6


def replay(npz: str, out: str, nativeccd: bool) -> None:
    """In either venv: the recorded ctrl on robosuite's XML; per substep qpos (S, nq) and
    the contacts (geom name pairs) after it, saved to `out` (.npz with a JSON string)."""
    import mujoco

    rec = np.load(npz)
    m = mujoco.MjModel.from_xml_string(str(rec["xml"]))
    if not nativeccd:
        m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_NATIVECCD)
    ids = [m.body(str(b)).id for b in rec["placed"]]
    m.body_pos[ids], m.body_quat[ids] = rec["body_pos"], rec["body_quat"]
    d = mujoco.MjData(m)
    d.time, d.qpos[:], d.qvel[:] = rec["time"][0], rec["qpos"][0], rec["qvel"][0]
    d.qacc_warmstart[:] = rec["warm"][0]
    qpos, contacts = [], []
    for ctrl in rec["ctrl"]:
        d.ctrl[:] = ctrl
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
        name = lambda g: mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"  # noqa: E731
        contacts.append([[name(c.geom1), name(c.geom2)] for c in d.contact[: d.ncon]])
    np.savez(out, qpos=np.array(qpos), contacts=json.dumps(contacts), version=mujoco.__version__)


def record(task: str, episode: int, folder: Path) -> Path:
    """The expert's metasim episode, replayed in robosuite with every substep recorded."""
    from metasim.evaluate.config import compose
    from metasim.robosuite.checks.xcheck import run_metasim
    from metasim.robosuite.importer.export import MODEL_SEED
    from metasim.robosuite.reference.simulator import RobosuiteRef
    from metasim.robosuite.tasks import task_facts

    facts = task_facts(task)
    # Two episodes: the pick expert fails with one env (a mask of `~` on a Python bool).
    spec = compose(["policy=robosuite_expert", "num_envs=2"]).rollout
    ep = next(e for e in run_metasim(task, spec, [episode, episode + 1]) if e.episode == episode)
    with RobosuiteRef() as ref:
        ref.load(facts.env, seed=MODEL_SEED, placed=list(facts.placed))
        ref.set_state(ep.qpos, ep.qvel, ep.body_pos, ep.body_quat, fresh=True)
        rec = ref.trace(np.array(ep.actions))
    path = folder / "trace.npz"
    np.savez(path, xml=rec["xml"], time=rec["time"], qpos=rec["qpos"], qvel=rec["qvel"],
             warm=rec["warm"], ctrl=rec["ctrl"], placed=np.array(list(facts.placed), dtype=str),
             body_pos=ep.body_pos, body_quat=ep.body_quat)  # fmt: skip
    return path


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Where two versions' runs part: the first substep (1-based) over `ATOL` in qpos, the
    contacts there, the largest and the final difference."""
    err = np.abs(a["qpos"] - b["qpos"]).max(axis=1)
    far = np.flatnonzero(err > ATOL)
    first = int(far[0]) if len(far) else None
    ca, cb = json.loads(str(a["contacts"])), json.loads(str(b["contacts"]))
    return {
        "versions": [str(a["version"]), str(b["version"])],
        "substeps": len(err),
        "first_substep_over_atol": None if first is None else first + 1,
        "max_before": float(err[:first].max()) if first else float(err.max()),
        "contacts_there": None if first is None else [ca[first], cb[first]],
        "max": float(err.max()),
        "final": float(err[-1]),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="Door")
    p.add_argument("--episode", type=int, default=2)
    p.add_argument("--no-nativeccd", action="store_true", help="libccd in both versions")
    p.add_argument("--out", type=Path, help="write the comparison as JSON")
    p.add_argument("--replay", nargs=2, metavar=("TRACE", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.replay:
        replay(*args.replay, nativeccd=not args.no_nativeccd)
        return 0
    from metasim.reference.refvenv import worker_env
    from metasim.robosuite.reference.simulator import ensure_venv

    with tempfile.TemporaryDirectory() as tmp:
        trace = record(args.task, args.episode, Path(tmp))
        runs = []
        for name, python in (("4", sys.executable), ("3", str(ensure_venv()))):
            out = Path(tmp) / f"run{name}.npz"
            cmd = [python, __file__, "--replay", str(trace), str(out)]
            flag = ["--no-nativeccd"] if args.no_nativeccd else []
            subprocess.run(cmd + flag, check=True, env=worker_env())
            runs.append(dict(np.load(out)))
        result = {"task": args.task, "episode": args.episode,
                  "nativeccd": not args.no_nativeccd, **compare(*runs)}  # fmt: skip
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
