"""Two `metasim serve` clients compiling scenes do not wait on each other (issue #23,
item 3): a small scene sent while another client's 1,200-box scene compiles is answered
before that compile ends; two sessions asking for the same scene share one compile."""

from __future__ import annotations

import threading
import time

from metasim.paths import SCENES
from metasim.policies.serving import SceneCache
from metasim.scene import load_scene
from metasim.scene.compile import CompiledScene


def _texts(boxes: int) -> tuple[str, str]:
    """(a scene with `boxes` more free boxes on a grid, lift_cube itself) as JSON."""
    scene = load_scene(SCENES / "lift_cube.yaml")
    cube = scene.objects[0]
    extra = [
        cube.model_copy(update={"name": f"box{i}", "pos": (0.3 + i % 40 * 0.05, i // 40 * 0.05, 1)})
        for i in range(boxes)
    ]
    big = scene.model_copy(update={"name": "big", "objects": [*scene.objects, *extra]})
    return big.model_dump_json(), scene.model_dump_json()


def test_a_small_scene_is_not_held_up_by_a_big_one() -> None:
    big, small = _texts(1200)
    cache = SceneCache()
    got: dict[str, CompiledScene] = {}
    ended: list[str] = []

    def compile_(name: str, text: str) -> None:
        got[name] = cache.get(text)
        ended.append(name)

    threads = [threading.Thread(target=compile_, args=(n, big)) for n in ("big1", "big2")]
    for t in threads:
        t.start()
    time.sleep(0.2)  # the big compile (over a second) is under way
    compile_("small", small)
    for t in threads:
        t.join()
    assert ended[0] == "small", ended  # answered while the big scene still compiled
    assert got["big1"] is got["big2"]  # one compile, shared by both sessions
    assert got["big1"].model.nbody > 1200 and len(cache) == 2
