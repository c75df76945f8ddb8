"""What a scene sent to `metasim serve` over the network may name: regular files inside
the server's assets folder, and nothing else.

A client's scene names files (object meshes and MJCF, MJCF fixtures and the textures
they swap, material textures, an `mjcf:` robot, recorded init states). Each name must be
a relative path without `..` whose file, once every link is followed, is a regular file
inside the assets folder (never a FIFO or a device, which would block or leak); it is
replaced by that file's absolute path, so the compiler opens exactly the file checked,
whatever folder a field is otherwise relative to. Every refusal is the same sentence,
naming the field and the client's own text, whether the file exists or not and whatever
it is, so a client learns nothing about the server's other files.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from metasim.paths import ASSETS
from metasim.scene.schema import Scene

_PATH_KEYS = ("mesh", "mjcf", "file")  # scene fields that name a file
_ROBOT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # a built-in or menagerie robot


class NetworkSceneError(ValueError):
    """A scene from the network names something the server will not open."""


def _refused(where: str, name: str) -> NetworkSceneError:
    return NetworkSceneError(
        f"{where}: refused: a scene sent over the network may only name regular files "
        f"inside the server's assets folder, by a relative path without '..' (got {name!r})"
    )


def _inside(name: str, base: Path, top: Path, where: str) -> str:
    """The absolute path of the regular file `name` (relative to `base`) inside `top`."""
    posix = name.replace("\\", "/")
    if (
        not name
        or "\x00" in name
        or PureWindowsPath(name).is_absolute()
        or posix.startswith(("/", "~"))
        or ".." in PurePosixPath(posix).parts
    ):
        raise _refused(where, name)
    try:
        real = (base / posix).resolve(strict=True)
        mode = real.stat().st_mode  # stat, never open: a FIFO is not opened
    except (OSError, RuntimeError):  # missing, a loop of links, unreadable
        raise _refused(where, name) from None
    if not real.is_relative_to(top) or not stat.S_ISREG(mode):
        raise _refused(where, name)
    return str(real)


def _walk(node: Any, where: str, top: Path) -> None:
    """Check and rewrite, in place, every file name in a scene's plain data."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _walk(item, f"{where}[{i}]", top)
        return
    if not isinstance(node, dict):
        return
    for key, item in node.items():
        at = f"{where}.{key}"
        if key in _PATH_KEYS and isinstance(item, str):
            node[key] = _inside(item, top, top, at)
        elif key == "name" and isinstance(item, str) and item.startswith("mjcf:"):
            node[key] = "mjcf:" + _inside(item.removeprefix("mjcf:"), top, top, at)
        elif key != "textures":
            _walk(item, at, top)
    textures = node.get("textures")
    if isinstance(textures, dict):  # images relative to the MJCF file's folder
        file = node.get("file")
        base = Path(file).parent if isinstance(file, str) else top
        for name, image in textures.items():
            at = f"{where}.textures.{name}"
            textures[name] = _inside(image, base, top, at) if isinstance(image, str) else image


def network_scene(scene: Scene, root: Path = ASSETS) -> Scene:
    """`scene` with every file it names checked (see the module doc) and made absolute;
    raises NetworkSceneError (a ValueError) naming the first field refused."""
    top = root.resolve()
    data = scene.model_dump(by_alias=True)
    robot = str(data["robot"]["name"])
    if not robot.startswith("mjcf:") and not _ROBOT_NAME.fullmatch(
        robot.removeprefix("menagerie:")
    ):
        raise NetworkSceneError(
            f"scene.robot.name: refused: a scene sent over the network names a built-in "
            f"robot, 'menagerie:<name>' or 'mjcf:<file in the assets folder>' (got {robot!r})"
        )
    _walk(data, "scene", top)
    return Scene.model_validate(data)
