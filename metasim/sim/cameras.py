"""Camera rigs: every observation camera of a batch, rendered together after each step.

A rig is made once for a handler and a fixed list of `View`s and renders all of them in
`render()`: (B, H, W, 3) uint8 per view (depth views: (B, H, W) float32 metres). Two
renderers: `opengl` (MuJoCo's OpenGL renderer, one frame per env and camera,
`Handler.render`) and `warp` (MuJoCo Warp's ray tracer, every camera of every env in one
launch; registered by the warp backend's package, whose rig module loads only when asked
for). The registry finds the backends' packages by looking in this folder: this module
imports no backend (nor the handler base, which imports it).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from metasim.registry import Registry, UnknownName

if TYPE_CHECKING:
    from metasim.scene.render_schema import RaytraceSpec

Handler = Any  # a metasim.sim.base.Handler (which imports this module)


@dataclass(frozen=True)
class View:
    """One image a rig renders: `camera` at width x height; depth in metres if `depth`."""

    camera: str
    width: int
    height: int
    depth: bool = False


class CameraRig(Protocol):
    """Renders a fixed list of views of every env of one handler."""

    renderer: str

    def render(self) -> list[np.ndarray]:
        """Per view, in order: (B, H, W, 3) uint8, or (B, H, W) float32 for depth."""
        ...

    def apply(self, field: str, index: int, values: np.ndarray) -> None:
        """A per-env model edit the handler took (values (B, ...)): its visual part."""
        ...

    def close(self) -> None: ...


class OpenGLRig:
    """MuJoCo's OpenGL renderer through `Handler.render`: one frame per env and view."""

    renderer = "opengl"

    def __init__(self, handler: Handler, views: Sequence[View]) -> None:
        self.handler = handler
        self.views = tuple(views)

    def render(self) -> list[np.ndarray]:
        h = self.handler
        # at the scene's observation instant (`task.observe_substep`; else now)
        return [
            h.render(v.camera, width=v.width, height=v.height, depth=v.depth, observed=True)
            for v in self.views
        ]

    def apply(self, field: str, index: int, values: np.ndarray) -> None:
        del field, index, values  # the handler loads each env's edits before rendering it

    def close(self) -> None:
        pass


RigMaker = Callable[[Handler, Sequence[View], "RaytraceSpec"], CameraRig]
RigLoader = Callable[[], RigMaker]


class _Renderers(Registry[RigLoader]):
    """The registry of renderers: its built-in entries are registered by the backend
    subpackages beside this module (imported without their modules: a rig module, which
    imports its renderer's library, loads only when that renderer is asked for)."""

    def load(self) -> None:
        if not self._loaded:
            here, package = [str(Path(__file__).parent)], __name__.rpartition(".")[0]
            for info in pkgutil.iter_modules(here, prefix=f"{package}."):
                if info.ispkg:
                    importlib.import_module(info.name)
        super().load()


# Renderer name -> loader of its rig class; "opengl" here, "warp" by the warp backend.
RENDERERS = _Renderers("renderer")
RENDERERS.register("opengl")(lambda: lambda handler, views, settings: OpenGLRig(handler, views))


def renderer_names() -> list[str]:
    """Every registered renderer."""
    return RENDERERS.names()


def check_renderer(renderer: str | None) -> None:
    """KeyError naming why, if `renderer` (None: the scene's) cannot render here."""
    if renderer is None:
        return
    try:
        RENDERERS[renderer]()
    except UnknownName:
        raise KeyError(
            f"unknown renderer {renderer!r}; expected one of {RENDERERS.names()}"
        ) from None
    except ModuleNotFoundError as exc:
        raise KeyError(f"renderer {renderer!r} is not available here ({exc})") from None


def make_rig(
    handler: Handler,
    views: Sequence[View],
    renderer: str,
    settings: RaytraceSpec,
    backgrounds: Any = None,
) -> CameraRig:
    """A rig of `renderer` for `views` of `handler`'s envs (KeyError: no such renderer,
    or one whose package is not installed here); `backgrounds`: the ray tracer's splat
    groups per world (a renderer without splats, OpenGL, draws the mesh fallback)."""
    check_renderer(renderer)
    extra = {"backgrounds": backgrounds} if backgrounds is not None and renderer == "warp" else {}
    return RENDERERS[renderer]()(handler, views, settings, **extra)


__all__ = [
    "RENDERERS",
    "CameraRig",
    "OpenGLRig",
    "View",
    "check_renderer",
    "make_rig",
    "renderer_names",
]
