"""The server's scene cache is bounded (least recently used evicted) and keeps only
scenes that compiled."""

from __future__ import annotations

import pytest

from metasim.errors import MetasimInputError
from metasim.paths import SCENES
from metasim.policies.serving import SceneCache
from metasim.scene import load_scene


def test_cache_is_bounded_and_keeps_only_compiled_scenes() -> None:
    scene = load_scene(SCENES / "lift_cube.yaml")
    cache = SceneCache(capacity=3)
    texts = [scene.model_copy(update={"name": f"s{i}"}).model_dump_json() for i in range(5)]
    for text in texts:
        cache.get(text)
    assert len(cache) == 3
    kept = cache.get(texts[4])
    assert cache.get(texts[4]) is kept  # a hit, not a recompile
    bad = scene.model_copy(update={"name": "bad"}).model_dump_json().replace("panda", "nope")
    with pytest.raises((MetasimInputError, ValueError)):
        cache.get(bad)
    assert len(cache) == 3


@pytest.mark.parametrize(
    ("field", "path"),
    [
        ("mesh", "/etc/passwd"),
        ("mesh", "../../../../etc/passwd"),
        ("mjcf", "robots/../../pyproject.toml"),
        ("mesh", "~/secret.stl"),
    ],
)
def test_network_scene_naming_files_outside_the_assets_is_refused(field: str, path: str) -> None:
    scene = load_scene(SCENES / "lift_cube.yaml")
    obj = scene.objects[0].model_copy(update={"shape": field, field: path})
    text = scene.model_copy(update={"objects": [obj, *scene.objects[1:]]}).model_dump_json()
    cache = SceneCache()
    with pytest.raises(ValueError, match="network") as err:
        cache.get(text)
    assert "root:" not in str(err.value)  # names the field, never echoes a file's contents
    assert len(cache) == 0
    # a well-behaved scene still compiles afterwards
    cache.get(scene.model_dump_json())
    assert len(cache) == 1


def test_network_robot_mjcf_outside_the_assets_is_refused() -> None:
    scene = load_scene(SCENES / "lift_cube.yaml")
    robot = scene.robot.model_copy(update={"name": "mjcf:/etc/passwd"})
    text = scene.model_copy(update={"robot": robot}).model_dump_json()
    with pytest.raises(ValueError, match=r"scene\.robot\.name"):
        SceneCache().get(text)
