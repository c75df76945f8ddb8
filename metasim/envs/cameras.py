"""The camera views of a vector env's observations, and their images from a camera rig."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from metasim.scene.compile import CompiledScene
from metasim.sim.cameras import View


@dataclass(frozen=True)
class CameraView:
    """A camera rendered into the observations: at its scene size, or at width x height
    (key `<camera>@<w>x<h>`), with a depth image under `<key>_depth` when asked."""

    camera: str
    width: int | None = None
    height: int | None = None
    depth: bool = False

    @property
    def key(self) -> str:
        if self.width is None or self.height is None:
            return self.camera
        return f"{self.camera}@{self.width}x{self.height}"


def rig_views(compiled: CompiledScene, views: Sequence[CameraView]) -> list[View]:
    """The rig's views of `views`, in order: each colour image, then its depth if asked
    (sizes resolved against the scene's cameras)."""
    out: list[View] = []
    for v in views:
        w, h = compiled.camera_size(v.camera)
        out.append(View(v.camera, v.width or w, v.height or h))
        if v.depth:
            out.append(View(v.camera, v.width or w, v.height or h, depth=True))
    return out


def image_dict(views: Sequence[CameraView], frames: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """`<key>_rgb` and `<key>_depth` entries of the rig's `frames` (in `rig_views` order)."""
    it = iter(frames)
    out: dict[str, np.ndarray] = {}
    for v in views:
        out[f"{v.key}_rgb"] = next(it)
        if v.depth:
            out[f"{v.key}_depth"] = next(it)
    return out
