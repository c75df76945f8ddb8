"""LIBERO's task source: `libero:<suite>/<task index or name>` -> the imported `Scene`.

Registered at import (light: the task itself is imported, with mujoco, only by `load`);
its suites are LIBERO's own (`libero_spatial`, `libero_object`, `libero_goal`,
`libero_10`, `libero_90` and the LIBERO-PRO variants), read from the installed
`libero` extra's task map, each task referenced by its index in LIBERO's order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metasim.errors import MetasimInputError
from metasim.paths import cache_dir
from metasim.scene.schema import Scene
from metasim.scene.sources import TaskSource, task_source


@task_source("libero:")
class LiberoSource(TaskSource):
    """LIBERO tasks, imported from BDDL and the installed asset packages."""

    render_reference = (
        "robosuite's MuJoCo OpenGL renderer (LIBERO's): measured PSNR 31.3 dB agentview, "
        "32.4 dB wrist camera (libero_10 at 256x256, 2x2 samples; 28.5 / 29.4 dB at 1x1; "
        "docs/rendering.md)"
    )

    def load(self, ref: str) -> Scene:
        from metasim.libero.importer.scene import load_task

        return load_task(ref).scene

    def suites(self) -> dict[str, list[str]]:
        """Every suite of LIBERO's task map ({} when the `libero` extra is missing)."""
        from metasim.libero.importer import paths

        try:
            task_map = paths._task_map()
        except MetasimInputError:
            return {}
        return {s: [f"libero:{s}/{i}" for i in range(len(t))] for s, t in task_map.items()}

    def asset_roots(self) -> list[Path]:
        """LIBERO's asset packages, its init states and metasim's imported robots."""
        from metasim.libero.importer import paths

        try:
            return [paths.assets_dir(), paths.libero_root() / "init_files", cache_dir() / "libero"]
        except MetasimInputError:  # the `libero` extra is not installed
            return []

    def bench(self, ref: str, num_envs: list[int], steps: int) -> dict[str, Any]:
        """Measured next to the reference simulator (robosuite + LIBERO), not rollout."""
        from metasim.libero.bench import bench_libero

        return bench_libero(ref, num_envs, steps)
