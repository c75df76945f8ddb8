"""Meta-World's `Benchmark` entry (metasim.reference.benchmark): its task source, expert,
presets, claimed backends, reference checks and reference simulator."""

from __future__ import annotations

from typing import Any

from metasim.reference.benchmark import CHECKS, Benchmark, register_benchmark


def probe_reference() -> dict[str, Any]:
    """Start the reference worker, ask it for its versions, close it."""
    from metasim.metaworld.reference.simulator import MetaWorldRef

    with MetaWorldRef() as ref:
        return dict(ref.versions())


METAWORLD = register_benchmark(
    Benchmark(
        "metaworld",
        presets=("lerobot_metaworld",),
        backends=("mujoco", "warp"),
        own_checks=CHECKS,
        reference="metasim.metaworld.benchmark:probe_reference",
        venv="metasim.metaworld.reference.simulator:ensure_venv",
    )
)
