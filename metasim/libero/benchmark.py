"""LIBERO's `Benchmark` entry (metasim.reference.benchmark): its task source, expert,
presets, claimed backends, reference checks and reference simulator."""

from __future__ import annotations

from typing import Any

from metasim.reference.benchmark import Benchmark, register_benchmark


def reference_ready() -> str | None:
    """None when the reference venv (robosuite 1.4 + LIBERO, MuJoCo 3.17) is there or was
    just built; else why it cannot be built here."""
    from metasim.libero.reference.simulator import ensure_venv

    try:
        ensure_venv()
    except Exception as exc:  # the build's own error, whatever the installer raised
        return f"the LIBERO reference venv cannot be built here: {exc}"
    return None


def probe_reference() -> dict[str, Any]:
    """Start the reference worker, ask it for one suite's tasks, close it."""
    from metasim.libero.reference.simulator import ReferenceSim

    with ReferenceSim() as ref:
        tasks = ref.tasks("libero_goal")
    return {"libero_goal tasks": len(tasks), "first task": tasks[0]["language"]}


LIBERO = register_benchmark(
    Benchmark(
        name="libero",
        source="libero:",
        expert="libero_expert",
        presets=("lerobot_libero", "openpi_libero"),
        backends=("mujoco", "warp"),
        checks={
            "parity": ("libero", "parity"),
            "modeldiff": ("libero", "modeldiff"),
            "xcheck": ("libero", "xcheck"),
        },
        reference=probe_reference,
        reference_ready=reference_ready,
    )
)
