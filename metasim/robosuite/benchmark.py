"""robosuite's `Benchmark` entry (metasim.reference.benchmark): its task source, expert,
preset, claimed backend, reference check and reference simulator."""

from __future__ import annotations

from metasim.reference.benchmark import Benchmark, register_benchmark

ROBOSUITE = register_benchmark(
    Benchmark(
        "robosuite",
        presets=("robomimic_robosuite",),
        own_checks=("modeldiff", "xcheck"),
        reference="metasim.robosuite.reference.simulator:probe_reference",
        venv="metasim.robosuite.reference.simulator:ensure_venv",
    )
)
