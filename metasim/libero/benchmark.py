"""LIBERO's `Benchmark` entry (metasim.reference.benchmark): its task source, expert,
presets, claimed backends, reference checks and reference simulator."""

from __future__ import annotations

from typing import Any

from metasim.reference.benchmark import CHECKS, Benchmark, register_benchmark


def probe_reference() -> dict[str, Any]:
    """Start the reference worker, ask it for one suite's tasks, close it."""
    from metasim.libero.reference.simulator import ReferenceSim

    with ReferenceSim() as ref:
        tasks = ref.tasks("libero_goal")
    return {"libero_goal tasks": len(tasks), "first task": tasks[0]["language"]}


LIBERO = register_benchmark(
    Benchmark(
        "libero",
        presets=("lerobot_libero", "openpi_libero"),
        backends=("mujoco", "warp"),
        own_checks=CHECKS,
        reference="metasim.libero.benchmark:probe_reference",
        venv="metasim.libero.reference.simulator:ensure_venv",
    )
)
