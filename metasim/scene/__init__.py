"""Scene layer: the YAML schema, loading with precise errors, and compilation to MuJoCo."""

from metasim.scene.compile import CompiledScene, SceneIndex, compile_scene
from metasim.scene.loader import load_scene
from metasim.scene.schema import Scene

__all__ = ["CompiledScene", "Scene", "SceneIndex", "compile_file", "compile_scene", "load_scene"]


def compile_file(path: str) -> CompiledScene:
    """Load, validate and compile the scene file at `path`."""
    from pathlib import Path

    p = Path(path)
    return compile_scene(load_scene(p), source=p)
