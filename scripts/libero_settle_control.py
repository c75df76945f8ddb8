"""Control experiment for the objects' free-joint damping: LIBERO's 10 settle steps
(`[0] * 6 + [-1]`) from each init state of one task, in the reference and in metasim with
the damping the importer sets (0.0005) and with it patched to 0; prints each init's worst
object position error (mm) over the settle steps and a JSON summary.

    nice -n 5 .venv/bin/python scripts/libero_settle_control.py --suite libero_spatial --task 5

One field patched, everything else equal: if the error comes back with the field at 0,
the miss was that field, not chaos (docs/log/libero.md, "A parity miss is not chaos ...").
"""

from __future__ import annotations

import argparse
import json

import mujoco
import numpy as np

from metasim.libero.checks.parity import (
    MetasimTask,
    place_fixtures,
    prepare,
    start_osc,
    step_metasim,
)
from metasim.libero.importer.scene import OBJECT_DAMPING, SETTLE_STEPS
from metasim.libero.reference.simulator import ReferenceSim


def settle_errors(
    sim: MetasimTask, ref: ReferenceSim, info: dict, init: int, dampings: dict[str, float]
) -> dict[str, float]:
    """Worst object position error (mm) over the settle steps from init state `init`, in
    metasim with each of `dampings` (label -> free-joint damping) against the reference."""
    model = sim.compiled.model
    names = [o.name for o in sim.task.scene.objects]
    dofs = np.concatenate(
        [np.arange(a, a + 6) for a in (model.joint(f"{n}/free").dofadr[0] for n in names)]
    )
    actions = np.zeros((SETTLE_STEPS, 7))
    actions[:, 6] = -1.0
    state, ctrl = ref.reset(init=init, seed=0)
    ref_steps = ref.step(actions)
    rows = [info["bodies"].index(info["objects"][n]) for n in names]
    place_fixtures(model, info["fixtures"], info["bodies"], state)
    out = {}
    for label, damping in dampings.items():
        model.dof_damping[dofs] = damping
        data = mujoco.MjData(model)
        sim.mapping.apply(model, data, sim.task.init_states[init])
        track = step_metasim(sim, data, start_osc(sim, data, ctrl), actions, names)
        err = np.linalg.norm(track["objects"] - ref_steps["body_xpos"][:, rows], axis=2)
        out[label] = float(err.max() * 1e3)
    model.dof_damping[dofs] = OBJECT_DAMPING
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="libero_spatial")
    parser.add_argument("--task", type=int, default=5)
    parser.add_argument("--inits", type=int, default=50)
    args = parser.parse_args()
    sim = prepare(args.suite, args.task)
    dampings = {"damped": OBJECT_DAMPING, "undamped": 0.0}
    rows = []
    with ReferenceSim() as ref:
        info = ref.load(args.suite, args.task, cameras=False)
        for k in range(args.inits):
            rows.append(settle_errors(sim, ref, info, k, dampings))
            print(k, {n: round(v, 6) for n, v in rows[-1].items()}, flush=True)
    summary = {"suite": args.suite, "task": args.task, "inits": args.inits}
    for label in dampings:
        errs = np.array([r[label] for r in rows])
        summary[label] = {"max_mm": errs.max(), "median_mm": float(np.median(errs)),
                          "over_1mm": int((errs > 1.0).sum())}  # fmt: skip
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
