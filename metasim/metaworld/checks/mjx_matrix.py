"""Which Meta-World tasks the mjx backend (mujoco-mjx, impl="jax") can simulate, and why
not where it cannot, without compiling anything for JAX.

For each task the scene is built from the task XML's own configuration (no reference
needed), compiled with MuJoCo 4, and taken through the path the mjx backend takes at
launch (`metasim.sim.mjx.support.physics_model`: cylinder stand-ins included, then
`support.unsupported`). Meta-World's cylinders (the puck of reach/push/pick-place, the
door and window handles, buttons, pegs...) touch the Sawyer's box fingers, so they get
16-sided prism stand-ins; the prism is a mesh, and the fingers' boxes have a 1 mm
collision margin, which MJX does not implement on a pair with a mesh ("margin/gap not
implemented"): those tasks are refused, as are the tasks whose own meshes (the plate of
plate-slide, the soccer goal, the box lid) meet a margin. The rest run.

    python -m metasim.metaworld.checks.mjx_matrix [--json FILE]

prints one row per MT50 task (the table in docs/support_matrix.md).
"""

from __future__ import annotations

import argparse
import collections
import json
from dataclasses import asdict, dataclass, field

import mujoco
from mujoco.mjx._src import collision_driver

from metasim.metaworld.importer.scene import scene_dict
from metasim.metaworld.importer.source import benchmark_tasks
from metasim.scene.compile import compile_scene
from metasim.scene.schema import Scene
from metasim.sim.mjx import support

RUNS = "runs"
REFUSED = "refused"


@dataclass
class TaskRow:
    """One task's line: status, the stand-ins it needs, what blocks it (per geom-type
    pair, with one example), and how many geom pairs MJX would test each step."""

    task: str
    status: str
    stand_ins: list[str] = field(default_factory=list)
    blocking: dict[str, int] = field(default_factory=dict)
    example: str = ""
    other: list[str] = field(default_factory=list)
    geom_pairs: int = 0


def _type(t: int) -> str:
    return mujoco.mjtGeom(int(t)).name.removeprefix("mjGEOM_").lower()


def _pair(m: mujoco.MjModel, g1: int, g2: int) -> str:
    a, b = sorted((int(m.geom_type[g1]), int(m.geom_type[g2])))
    return f"{_type(a)}/{_type(b)}"


def classify(task: str) -> TaskRow:
    """The row of `task` (an MT50 env name, e.g. "reach-v3")."""
    compiled = compile_scene(Scene.model_validate(scene_dict(task, states=False)))
    phys = support.physics_model(compiled)
    m = phys.model
    row = TaskRow(task, RUNS, [s.label for s in phys.stand_ins])
    row.geom_pairs = len(list(collision_driver.geom_pairs(m)))
    blocking: collections.Counter[str] = collections.Counter()
    for g1, g2 in support.unsupported_pairs(m):
        blocking[f"{_pair(m, g1, g2)} (no collision function)"] += 1
    for g1, g2, margin in support.mesh_margin_pairs(m):
        blocking[f"{_pair(m, g1, g2)} margin"] += 1
        row.example = row.example or (
            f"{support.geom_label(m, g1, phys.stand_ins)} against "
            f"{support.geom_label(m, g2, phys.stand_ins)}: margin {margin:g}"
        )
    row.blocking = dict(blocking)
    row.other = support.unsupported_options(m)
    if row.blocking or row.other:
        row.status = REFUSED
    return row


def matrix(tasks: list[str] | None = None) -> list[TaskRow]:
    """Rows of `tasks` (default MT50's 50, in the package's order)."""
    return [classify(t) for t in tasks or benchmark_tasks()["MT50/train"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    rows = matrix()
    for r in rows:
        why = ", ".join(f"{k} x{v}" for k, v in r.blocking.items()) or "-"
        print(f"| {r.task} | {r.status} | {len(r.stand_ins)} | {why} | {r.geom_pairs} |")
    print(f"runs: {sum(r.status == RUNS for r in rows)} of {len(rows)}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump([asdict(r) for r in rows], out, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
