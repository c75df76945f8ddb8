from __future__ import annotations

from pathlib import Path

import pytest

from metasim.paths import SCENES

SCENE_FILES = sorted(SCENES.glob("*.yaml"))


@pytest.fixture(scope="session")
def lift_scene():
    from metasim.scene import compile_file

    return compile_file(str(SCENES / "lift_cube.yaml"))


def scene_ids() -> list[str]:
    return [p.stem for p in SCENE_FILES]


__all__ = ["SCENE_FILES", "Path", "scene_ids"]
