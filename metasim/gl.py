"""Which OpenGL MuJoCo's offscreen renderer uses (`MUJOCO_GL`), chosen before mujoco is
first imported (metasim/__init__).

A user's `MUJOCO_GL` is kept. Otherwise EGL (headless, Mesa or NVIDIA's) where libEGL is
found, else OSMesa (software) where libOSMesa is, else `disable`: `import mujoco` would
fail outright with `egl` and no libEGL (PyOpenGL loads it on import), so metasim still
imports and simulates, and a camera render raises `NoOpenGL` (this module's
`NO_GL_HINT`) instead of a ctypes error. The warp renderer (`render=warp`) needs no
OpenGL. On Debian, `apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri` brings EGL
(docs/install.md, "On a GPU machine").
"""

from __future__ import annotations

import ctypes.util
from collections.abc import Callable, MutableMapping

# library name (as ctypes.util.find_library takes it) -> MUJOCO_GL, in order of preference
BACKENDS = (("EGL", "egl"), ("OSMesa", "osmesa"))
NO_GL_HINT = (
    "no OpenGL for MuJoCo's offscreen renderer: neither libEGL nor libOSMesa was found, so "
    "metasim set MUJOCO_GL=disable. Install EGL (Debian: apt-get install libegl1 "
    "libegl-mesa0 libgl1-mesa-dri) or OSMesa (libosmesa6), or set MUJOCO_GL yourself; "
    "render=warp renders without OpenGL"
)


class NoOpenGL(RuntimeError):
    """A camera render on a machine where metasim found no OpenGL (see NO_GL_HINT)."""


def choose_mujoco_gl(
    env: MutableMapping[str, str],
    find: Callable[[str], str | None] = ctypes.util.find_library,
) -> str:
    """Set `env["MUJOCO_GL"]` unless it is set (see the module docstring); return it."""
    if env.get("MUJOCO_GL"):
        return env["MUJOCO_GL"]
    chosen = next((gl for lib, gl in BACKENDS if find(lib)), "disable")
    env["MUJOCO_GL"] = chosen
    if chosen == "disable":
        env["METASIM_NO_GL"] = "1"  # metasim chose it: renders raise NoOpenGL
    return chosen


def check_gl(env: MutableMapping[str, str]) -> None:
    """Raise NoOpenGL where metasim turned MuJoCo's OpenGL off for want of a library."""
    if env.get("METASIM_NO_GL") == "1" and env.get("MUJOCO_GL") == "disable":
        raise NoOpenGL(NO_GL_HINT)
