"""The toy benchmark's task source: `toy:lift/<n>` is scenes/lift_cube.yaml renamed
`toy_lift_<n>` with the cube moved n cm along y (so the tasks differ), a `toy_pad` under
it and success also asking `toy_near` (the toy benchmark's own kinds, tests/toy_bench/
kinds.py); `toy:far/<n>` is the same with the pad 60 cm to the side, so lifting the cube
is not enough. Its one suite `toy_suite` lists `toy:lift/0` and `toy:lift/1`."""

from __future__ import annotations

from pathlib import Path

from metasim.paths import SCENES
from metasim.scene.loader import load_scene
from metasim.scene.schema import Scene
from metasim.scene.sources import NoSuchTask, TaskSource, task_source
from tests.toy_bench import kinds as kinds  # registers toy_pad and toy_near

PREFIX = "toy:"
SUITE = "toy_suite"
BASE = SCENES / "lift_cube.yaml"


FAMILIES = {"lift": 0.0, "far": 0.6}  # family -> the pad's y offset (m)


def _parse(ref: str) -> tuple[str, int]:
    body = ref.removeprefix(PREFIX)
    family, _, n = body.partition("/")
    if family not in FAMILIES or not n.isdigit():
        raise NoSuchTask(
            f"the toy benchmark has no task {ref!r} (expected toy:lift/<n> or toy:far/<n>)"
        )
    return family, int(n)


@task_source(PREFIX)
class ToySource(TaskSource):
    def locate(self, ref: str) -> Path:
        _parse(ref)
        return BASE  # relative asset paths resolve from scenes/

    def load(self, ref: str) -> Scene:
        family, n = _parse(ref)
        scene = load_scene(BASE)
        data = scene.model_dump(by_alias=True)
        data["name"] = f"toy_{family}_{n}"
        pos = data["objects"][0]["pos"]
        data["objects"][0]["pos"] = [pos[0], pos[1] + 0.01 * n, pos[2]]
        pad = [pos[0], FAMILIES[family], 0.0]
        data["fixtures"].append({"type": "toy_pad", "name": "pad", "pos": pad, "jitter": 0.02})
        near = {"toy_near": {"object": "cube", "target": "pad", "radius": 0.25}}
        data["task"]["success"] = {"all": [data["task"]["success"], near]}
        return Scene.model_validate(data)

    def suites(self) -> dict[str, list[str]]:
        return {SUITE: [f"{PREFIX}lift/0", f"{PREFIX}lift/1"]}
