"""Meta-World's `Benchmark` entry (metasim.reference.benchmark): its task source, expert,
presets, claimed backends, reference checks and reference simulator."""

from __future__ import annotations

from typing import Any

from metasim.reference.benchmark import Benchmark, register_benchmark


def reference_ready() -> str | None:
    """None when the reference venv (metaworld 3.1.1, MuJoCo 3.3.0) is there or was just
    built; else why it cannot be built here."""
    from metasim.metaworld.reference.simulator import ensure_venv

    try:
        ensure_venv()
    except Exception as exc:  # the build's own error, whatever the installer raised
        return f"the Meta-World reference venv cannot be built here: {exc}"
    return None


def probe_reference() -> dict[str, Any]:
    """Start the reference worker, ask it for its versions, close it."""
    from metasim.metaworld.reference.simulator import MetaWorldRef

    with MetaWorldRef() as ref:
        return dict(ref.versions())


METAWORLD = register_benchmark(
    Benchmark(
        name="metaworld",
        source="metaworld:",
        expert="metaworld_expert",
        presets=("lerobot_metaworld",),
        backends=("mujoco", "warp"),
        checks={
            "parity": ("metaworld", "parity"),
            "modeldiff": ("metaworld", "modeldiff"),
            "xcheck": ("metaworld-compare",),
        },
        reference=probe_reference,
        reference_ready=reference_ready,
    )
)
