"""The toy benchmark's task source: `toy:lift/<n>` is scenes/lift_cube.yaml renamed
`toy_lift_<n>` with the cube moved n cm along y (so the tasks differ), and its one suite
`toy_suite` lists `toy:lift/0` and `toy:lift/1`."""

from __future__ import annotations

from pathlib import Path

from metasim.paths import SCENES
from metasim.scene.loader import load_scene
from metasim.scene.schema import Scene
from metasim.scene.sources import NoSuchTask, TaskSource, task_source

PREFIX = "toy:"
SUITE = "toy_suite"
BASE = SCENES / "lift_cube.yaml"


def _index(ref: str) -> int:
    body = ref.removeprefix(PREFIX)
    family, _, n = body.partition("/")
    if family != "lift" or not n.isdigit():
        raise NoSuchTask(f"the toy benchmark has no task {ref!r} (expected toy:lift/<n>)")
    return int(n)


@task_source(PREFIX)
class ToySource(TaskSource):
    def locate(self, ref: str) -> Path:
        _index(ref)
        return BASE  # relative asset paths resolve from scenes/

    def load(self, ref: str) -> Scene:
        n = _index(ref)
        scene = load_scene(BASE)
        data = scene.model_dump(by_alias=True)
        data["name"] = f"toy_lift_{n}"
        pos = data["objects"][0]["pos"]
        data["objects"][0]["pos"] = [pos[0], pos[1] + 0.01 * n, pos[2]]
        return Scene.model_validate(data)

    def suites(self) -> dict[str, list[str]]:
        return {SUITE: [f"{PREFIX}lift/0", f"{PREFIX}lift/1"]}
