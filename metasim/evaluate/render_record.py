"""What a run records of its camera renderer: the manifest's `renderer`, the summary's
`image_inputs` note where the images are not the benchmark's own, and (both) the
`backgrounds` that scenes with a scanned background were drawn in."""

from __future__ import annotations

import os
from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from metasim.evaluate.plan import Plan


def renderer_record(render: str | None) -> str:
    """The camera renderer of a run, in words (the manifest records it)."""
    gl = f"MuJoCo offscreen OpenGL (MUJOCO_GL={os.environ.get('MUJOCO_GL', '')})"
    if render == "warp":
        try:
            mjw = metadata.version("mujoco-warp")
        except metadata.PackageNotFoundError:
            mjw = "not installed"
        return f"warp: MuJoCo Warp's ray tracer (mujoco-warp {mjw}), every camera in one launch"
    if render == "opengl":
        return f"opengl: {gl}"
    return f"each scene's render.renderer (opengl: {gl}, unless a scene says warp)"


def image_inputs(render: str | None, tasks: list[str]) -> dict[str, str] | None:
    """Under render=warp, per task source whose benchmark renders its reference images
    otherwise: that the policy's image inputs differ from the benchmark's, by how much."""
    from metasim.scene.sources import source_of

    if render != "warp":
        return None
    notes = {}
    for ref in tasks:
        source = source_of(ref)
        if source.render_reference:
            notes[source.prefix or ref] = (
                "image inputs differ from the benchmark's: rendered by MuJoCo Warp's ray "
                f"tracer, not {source.render_reference}"
            )
    return notes or None


def background_records(plan: Plan, render: str | None) -> dict[str, dict[str, Any]] | None:
    """Per task and cell, what its images showed behind the meshes
    (`metasim.scene.background.background_record`: splats under the warp renderer, the
    mesh fallback under OpenGL; `{"kind": "none"}` for a scene without one); None if no
    scene of the run has a background."""
    from metasim.scene.background import background_record

    out: dict[str, dict[str, Any]] = {}
    for item in plan.items():
        renderer = render or item.scene.render.renderer
        record = background_record(item.scene, item.task.path.parent, renderer)
        out.setdefault(item.name, {})[item.cell.id] = record or {"kind": "none"}
    shown = any(r["kind"] != "none" for cells in out.values() for r in cells.values())
    return out if shown else None
