"""robosuite's task source: `robosuite:<Task>` (`robosuite:Lift`) -> the imported `Scene`;
one suite, `robosuite`, of the single-arm Panda tasks in `tasks.TASKS`. Loading a task
the first time exports it from robosuite itself through the reference worker (cached)."""

from __future__ import annotations

from pathlib import Path

from metasim.paths import cache_dir
from metasim.robosuite.tasks import ROBOSUITE_SUITE, TASKS
from metasim.scene.schema import Scene
from metasim.scene.sources import TaskSource, task_source


@task_source("robosuite:")
class RobosuiteSource(TaskSource):
    """robosuite 1.4.0's own tasks, imported from the MJCF robosuite builds."""

    def load(self, ref: str) -> Scene:
        from metasim.robosuite.importer.scene import load_task

        return load_task(ref)

    def suites(self) -> dict[str, list[str]]:
        return {ROBOSUITE_SUITE: [f"robosuite:{t}" for t in TASKS]}

    def describe(self, suite: str) -> str:
        return "robosuite 1.4's single-arm Panda tasks (Lift, Stack, PickPlaceCan, ...)."

    def asset_roots(self) -> list[Path]:
        """The exported worlds and states, and the reference venv's robosuite assets."""
        from metasim.robosuite.reference.simulator import VENV

        return [cache_dir() / "robosuite", VENV]
