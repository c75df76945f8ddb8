"""The `background` axis: which scanned background (Gaussian splats) a cell is drawn in,
so one run evaluates a checkpoint across several scanned rooms.

A level is a splat file (`room_a.ply`: the scene's own placement and fallback kept, the
file replaced), a mapping of the scene's `background:` fields (`{splats: room_b.ply,
pos: [...], quat: [...], scale: 1.0, fallback: background}`), or `none` (no splats: the
scene's meshes only). Relative file names resolve against the working directory (where
`metasim eval` runs), and every level's file is read when the grid is checked, so a
missing or malformed file is refused before anything runs, naming the cell.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metasim.errors import MetasimInputError
from metasim.perturb.axes import SCENE_AXES
from metasim.scene.background import load_background
from metasim.scene.render_schema import BackgroundSpec
from metasim.scene.schema import Scene

NONE_LEVELS = (None, "none", "")


def background_of(scene: Scene, value: Any) -> BackgroundSpec | None:
    """The background a level `value` gives `scene` (module doc); ValueError if bad."""
    if value in NONE_LEVELS:
        return None
    if isinstance(value, str):
        base = scene.background or BackgroundSpec(splats=value)
        spec = base.model_copy(update={"splats": value})
    elif isinstance(value, dict):
        fields = {"fallback": scene.background.fallback if scene.background else None, **value}
        spec = BackgroundSpec.model_validate(fields)
    else:
        raise ValueError(f"a background level is a splat file, a mapping or none; got {value!r}")
    spec = spec.model_copy(update={"splats": str(Path(spec.splats).resolve())})
    names = [o.name for o in scene.objects]
    if spec.fallback is not None and spec.fallback not in names:
        raise ValueError(f"fallback {spec.fallback!r} is not an object of the scene ({names})")
    try:
        load_background(spec, None)
    except (MetasimInputError, OSError) as exc:
        problems = getattr(exc, "problems", None) or [str(exc)]
        raise ValueError(f"splat file {value!r}: {'; '.join(problems)}") from None
    return spec


@SCENE_AXES.register("background")
def _background(scene: Scene, value: Any, target: str | None) -> Scene:
    """Draw the scene in the scanned background `value` (a splat file, a mapping of
    `background:` fields, or none)."""
    del target
    return scene.model_copy(update={"background": background_of(scene, value)})


__all__ = ["NONE_LEVELS", "background_of"]
