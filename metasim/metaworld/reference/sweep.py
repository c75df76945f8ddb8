"""The package's scripted policies over a benchmark's variations, in the reference venv:
the per-task expert success that metasim's `metaworld_expert` must match (docs/metaworld.md).

    PYTHONPATH=$PWD .venv/bin/python -m metasim.metaworld.reference.sweep MT50 3
    PYTHONPATH=$PWD .venv/bin/python -m metasim.metaworld.reference.sweep facts > facts.json
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from metasim.metaworld.reference.simulator import MetaWorldRef


def expert_sweep(
    ref: MetaWorldRef, benchmark: str = "MT50", variations: int = 3, seed: int = 0
) -> dict[str, Any]:
    """Per task (benchmark order): successes out of `variations` episodes (variations
    0..variations-1, env seed 0, ended at the first success), mean first-success step;
    plus the overall success rate, the episode count and the wall time of the episodes
    (the benchmark's construction, which draws the variations, timed apart)."""
    start = time.perf_counter()
    names = ref.tasks(benchmark, seed=seed)
    built = time.perf_counter()
    rows: dict[str, dict[str, Any]] = {}
    for task in names:
        eps = [
            ref.expert(benchmark, task, k, seed=seed, until_success=True) for k in range(variations)
        ]
        wins = [e["steps"] for e in eps if e["success"]]
        mean = round(sum(wins) / len(wins), 1) if wins else None
        rows[task] = {"success": len(wins), "episodes": variations, "mean_steps": mean}
    total = sum(r["success"] for r in rows.values())
    return {
        "benchmark": benchmark,
        "seed": seed,
        "tasks": rows,
        "rate": total / (variations * len(names)),
        "episodes": variations * len(names),
        "build_s": round(built - start, 1),
        "episodes_s": round(time.perf_counter() - built, 1),
    }


def markdown(result: dict[str, Any]) -> str:
    """The sweep as a Markdown table, one row per task."""
    lines = ["| task | success | mean first-success step |", "|---|---|---|"]
    for task, r in result["tasks"].items():
        lines.append(f"| {task} | {r['success']}/{r['episodes']} | {r['mean_steps']} |")
    lines.append(
        f"\n{result['benchmark']} (seed {result['seed']}): {result['rate']:.3f} over "
        f"{result['episodes']} episodes; benchmark built in {result['build_s']} s, "
        f"episodes {result['episodes_s']} s."
    )
    return "\n".join(lines)


def task_facts(ref: MetaWorldRef, tasks: list[str]) -> dict[str, dict[str, Any]]:
    """Per task: its XML inside the package, rand_vec length, nq, nbody, mocap bounds, the
    tool centre after reset (m, 4 decimals), and whether the env seed changes the scripted
    episode (MT1 variation 0, env seeds 0 and 7)."""
    out: dict[str, dict[str, Any]] = {}
    for task in tasks:
        f = ref.facts(task)
        runs = [ref.expert("MT1", task, 0, env_seed=s, until_success=True) for s in (0, 7)]
        out[task] = {
            "xml": f["xml"],
            "rand_vec": int(f["rand_vec"].shape[0]),
            "nq": f["sizes"]["nq"],
            "nbody": f["sizes"]["nbody"],
            "mocap_low": f["mocap_low"].round(3).tolist(),
            "mocap_high": f["mocap_high"].round(3).tolist(),
            "hand": f["hand"].round(4).tolist(),
            "env_seed_matters": runs[0]["steps"] != runs[1]["steps"],
        }
    return out


if __name__ == "__main__":
    with MetaWorldRef() as ref:
        if sys.argv[1:2] == ["facts"]:
            print(json.dumps(task_facts(ref, ref.tasks("MT50")), indent=1))
        else:
            bench, count = (sys.argv[1:2] or ["MT50"])[0], int((sys.argv[2:3] or ["3"])[0])
            print(markdown(expert_sweep(ref, bench, count)))
