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
