"""The package's scripted policies over a benchmark's variations, in the reference venv:
the per-task expert success that metasim's `metaworld_expert` must match (docs/log/metaworld.md).

    PYTHONPATH=$PWD .venv/bin/python -m metasim.metaworld.reference.sweep MT50 3
    PYTHONPATH=$PWD .venv/bin/python -m metasim.metaworld.reference.sweep facts > facts.json
    PYTHONPATH=$PWD .venv/bin/python -m metasim.metaworld.reference.sweep resets MT50 10 3
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np

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


def reset_changes(
    ref: MetaWorldRef,
    benchmark: str = "MT50",
    variations: int = 10,
    shown: int = 3,
    tasks: list[str] | None = None,
) -> dict[str, Any]:
    """Per task: what `init_states` over variations 0..variations-1 reports, timed
    (seconds for the call, and the median per variation), and which model fields differ
    from the fresh XML in variations 0..shown-1 ("field: element names") and which env
    attributes reset wrote. The benchmark's construction is timed apart."""
    start = time.perf_counter()
    names = tasks or ref.tasks(benchmark)
    ref.variations(benchmark, names[0])  # builds the benchmark (draws the variations)
    built, rows = time.perf_counter(), {}
    for task in names:
        t = time.perf_counter()
        s = ref.init_states(task, benchmark, variations=list(range(variations)))
        changed = []
        for field, c in s["model"].items():
            same = np.isclose(c["values"][:shown], c["fresh"], rtol=0, atol=0, equal_nan=True)
            moved = np.any(~same.reshape(shown, len(c["rows"]), -1), axis=(0, 2))
            changed += [f"{field}: {n}" for n, m in zip(c["names"], moved, strict=True) if m]
        rows[task] = {
            "model": changed,
            "attrs": sorted(k for k in s["attrs"] if k != "_prev_obs"),
            "seconds": round(time.perf_counter() - t, 2),
            "per_variation": round(float(np.median(s["seconds"])), 3),
        }
    total = round(time.perf_counter() - built, 1)
    return {
        "benchmark": benchmark,
        "build_s": round(built - start, 1),
        "total_s": total,
        "tasks": rows,
    }


def reset_markdown(result: dict[str, Any]) -> str:
    """`reset_changes` as a Markdown table, one row per task."""
    lines = ["| task | model fields reset writes | init_states s | s / variation |"]
    lines.append("|---|---|---|---|")
    for task, r in result["tasks"].items():
        lines.append(
            f"| {task} | {'; '.join(r['model'])} | {r['seconds']} | {r['per_variation']} |"
        )
    lines.append(
        f"\n{result['benchmark']}: built in {result['build_s']} s; init_states for all tasks "
        f"{result['total_s']} s."
    )
    return "\n".join(lines)


if __name__ == "__main__":
    with MetaWorldRef() as ref:
        if sys.argv[1:2] == ["facts"]:
            print(json.dumps(task_facts(ref, ref.tasks("MT50")), indent=1))
        elif sys.argv[1:2] == ["resets"]:
            bench, count, shown = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
            result = reset_changes(ref, bench, count, shown)
            print(reset_markdown(result))
            print(json.dumps(result))
        else:
            bench, count = (sys.argv[1:2] or ["MT50"])[0], int((sys.argv[2:3] or ["3"])[0])
            print(markdown(expert_sweep(ref, bench, count)))
