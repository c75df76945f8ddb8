"""LIBERO's task source: `libero:<suite>/<task index or name>` -> the imported `Scene`.

Registered at import (light: the task itself is imported, with mujoco, only by `load`);
its suites are LIBERO's own (`libero_spatial`, `libero_object`, `libero_goal`,
`libero_10`, `libero_90` and the LIBERO-PRO variants), read from the installed
`libero` extra's task map, each task referenced by its index in LIBERO's order.

Its options (`LiberoOptions`, `metasim eval ... +task_options.fixture_draw=openpi`):
`fixture_draw`, a harness whose episode k fixture poses metasim's episode k takes
(`metasim.libero.harness_draw`); unset, each episode draws them from its own seed.
`init_rows=A-B`: episodes start from init states A..B only (episode k from A + k mod
(B - A + 1)), a held-out split of the 50 (`+task_options.init_rows=25-49`).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from metasim.errors import MetasimInputError
from metasim.paths import cache_dir
from metasim.scene.schema import Scene
from metasim.scene.sources import TaskSource, task_source

DESCRIPTIONS = {
    "libero_spatial": "The same objects in different layouts; place the black bowl on the plate.",
    "libero_object": "Pick a named grocery item and place it in the basket.",
    "libero_goal": "One scene, ten different goals (drawers, stove, placements).",
    "libero_10": "Ten long-horizon tasks in kitchen, living-room and study scenes.",
    "libero_90": "Ninety short tasks in kitchen, living-room and study scenes.",
}


# The harnesses whose fixture draw metasim reproduces (`harness_draw.HARNESSES`' names).
FixtureDraw = Literal["openpi"]


class LiberoOptions(BaseModel):
    """The options of LIBERO's tasks (`task_options.*`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # episode k's fixtures where this harness's episode k has them; None: drawn from the
    # episode's seed
    fixture_draw: FixtureDraw | None = None
    # "A-B": only init states A..B (inclusive) start episodes, episode k from A + k mod
    # (B - A + 1); a held-out split (demonstrations on one range, evaluation on another)
    init_rows: str | None = None

    @field_validator("init_rows")
    @classmethod
    def _rows(cls, v: str | None) -> str | None:
        if v is not None:
            init_range(v)
        return v

    @model_validator(mode="after")
    def _not_both(self) -> LiberoOptions:
        if self.fixture_draw is not None and self.init_rows is not None:
            raise ValueError(
                "init_rows with fixture_draw: a harness's episode k starts from init state k, "
                "so its fixture draw would not be the one of metasim's episode k"
            )
        return self


def init_range(text: str) -> tuple[int, int]:
    """`A-B` (init states A..B, inclusive, 0 <= A <= B) as [start, stop)."""
    m = re.fullmatch(r"(\d+)-(\d+)", text.strip())
    if m is None or int(m[1]) > int(m[2]):
        raise ValueError(f"expected 'A-B', init states A..B with A <= B, got {text!r}")
    return int(m[1]), int(m[2]) + 1


@functools.cache
def loadable(suite: str) -> bool:
    """Whether every task of `suite` has its BDDL file, initial states and a model for each
    object category it names (files only: nothing is compiled)."""
    from metasim.libero.importer import paths
    from metasim.libero.importer.assets import model_xml
    from metasim.libero.importer.bddl import parse_bddl

    if not paths.resource_complete(suite):
        return False
    try:
        for task in paths.suite_tasks(suite):
            problem = parse_bddl(paths.bddl_dir(suite) / f"{task}.bddl")
            for category in problem.objects:
                model_xml(category)
    except MetasimInputError:
        return False
    return True


@task_source("libero:")
class LiberoSource(TaskSource):
    """LIBERO tasks, imported from BDDL and the installed asset packages."""

    render_reference = (
        "robosuite's MuJoCo OpenGL renderer (LIBERO's): measured mean PSNR 32.9 dB "
        "agentview, 33.0 dB wrist camera (10 held-out tasks at 256x256, 2x2 samples; "
        "translucent geoms drawn opaque; docs/rendering.md)"
    )

    options = LiberoOptions

    def load(self, ref: str) -> Scene:
        from metasim.libero.importer.scene import load_task

        return load_task(ref).scene

    def load_with(self, ref: str, options: BaseModel) -> Scene:
        from metasim.libero.importer.scene import load_task

        assert isinstance(options, LiberoOptions)
        rows = None if options.init_rows is None else init_range(options.init_rows)
        return load_task(ref, fixture_draw=options.fixture_draw, init_rows=rows).scene

    def suites(self) -> dict[str, list[str]]:
        """Every suite of LIBERO's task map that the installed packages can load ({} when
        the `libero` extra is missing). LIBERO-PRO's map names suites whose BDDL files,
        initial states or object models its wheels do not ship (35 of 82 in 0.1.1); those
        are left out (`libero:<suite>/<i>` still says which file is missing)."""
        from metasim.libero.importer import paths

        try:
            task_map = paths._task_map()
        except MetasimInputError:
            return {}
        return {
            s: [f"libero:{s}/{i}" for i in range(len(t))]
            for s, t in task_map.items()
            if loadable(s)
        }

    def describe(self, suite: str) -> str:
        """LIBERO's four 10-task suites and LIBERO-90 by what they vary; a LIBERO-PRO
        variant by its base suite."""
        for base, text in DESCRIPTIONS.items():
            if suite == base:
                return text
        base = next((b for b in DESCRIPTIONS if suite.startswith(b + "_")), "")
        return f"A LIBERO-PRO variant of {base} ({suite[len(base) + 1 :]})." if base else ""

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
