"""robosuite's `Benchmark` entry (metasim.reference.benchmark): its task source, expert,
preset, claimed backend, reference check and reference simulator."""

from __future__ import annotations

from metasim.reference.benchmark import Benchmark, register_benchmark

ROBOSUITE = register_benchmark(
    Benchmark(
        name="robosuite",
        source="robosuite:",
        expert="robosuite_expert",
        presets=("robomimic_robosuite",),
        backends=("mujoco",),
        checks={"modeldiff": ("robosuite", "modeldiff"), "xcheck": ("robosuite", "xcheck")},
        reference="metasim.robosuite.reference.simulator:probe_reference",
        venv="metasim.libero.reference.simulator:ensure_venv",
    )
)
