"""What a scene sent to `metasim serve` over the network may name: regular files inside
the server's assets folder or an installed benchmark's asset folders, and nothing else.

A client's scene names files (object meshes and MJCF, MJCF fixtures and the textures
they swap, material textures, an `mjcf:` robot, recorded init states). Each name must be
a relative path without `..` whose file, once every link is followed, is a regular file
inside the assets folder (never a FIFO or a device, which would block or leak); it is
replaced by that file's absolute path, so the compiler opens exactly the file checked,
whatever folder a field is otherwise relative to. Every refusal is the same sentence,
naming the field and the client's own text, whether the file exists or not and whatever
it is, so a client learns nothing about the server's other files.

A benchmark's scenes (Meta-World's, LIBERO's) name their robot, fixtures and init states
by absolute path inside the benchmark package's folders and the files metasim generated
for it (each task source's `asset_roots`): an absolute name is accepted by the same rule,
its file once every link is followed a regular file inside one of those folders.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Sequence
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
        f"inside the server's assets folder, by a relative path without '..', or inside "
        f"an installed benchmark's asset folders (got {name!r})"
    )


def _inside(name: str, base: Path, top: Path, where: str, roots: Sequence[Path] = ()) -> str:
    """The absolute path of the regular file `name` inside `top` (relative to `base`), or
    inside one of `roots` (resolved folders) for an absolute `name` or one relative to a
    file of that root (a benchmark fixture's `../textures/x.png`: resolved, it stays in)."""
    posix = name.replace("\\", "/")
    absolute = posix.startswith("/") and not posix.startswith("//")
    in_root = [r for r in roots if base.is_relative_to(r)]  # a benchmark file's neighbour
    if (
        not name
        or "\x00" in name
        or PureWindowsPath(name).is_absolute()
        or (posix.startswith(("/", "~")) and not (absolute and roots))
        or (".." in PurePosixPath(posix).parts and not (in_root and not absolute))
    ):
        raise _refused(where, name)
    try:
        real = (base / posix).resolve(strict=True)
        mode = real.stat().st_mode  # stat, never open: a FIFO is not opened
    except (OSError, RuntimeError):  # missing, a loop of links, unreadable
        raise _refused(where, name) from None
    allowed = roots if absolute else in_root or (top,)
    if not any(real.is_relative_to(r) for r in allowed) or not stat.S_ISREG(mode):
        raise _refused(where, name)
    return str(real)


def _walk(node: Any, where: str, top: Path, roots: Sequence[Path] = ()) -> None:
    """Check and rewrite, in place, every file name in a scene's plain data."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _walk(item, f"{where}[{i}]", top, roots)
        return
    if not isinstance(node, dict):
        return
    for key, item in node.items():
        at = f"{where}.{key}"
        if key in _PATH_KEYS and isinstance(item, str):
            node[key] = _inside(item, top, top, at, roots)
        elif key == "name" and isinstance(item, str) and item.startswith("mjcf:"):
            node[key] = "mjcf:" + _inside(item.removeprefix("mjcf:"), top, top, at, roots)
        elif key != "textures":
            _walk(item, at, top, roots)
    textures = node.get("textures")
    if isinstance(textures, dict):  # images relative to the MJCF file's folder
        file = node.get("file")
        base = Path(file).parent if isinstance(file, str) else top
        for name, image in textures.items():
            at = f"{where}.textures.{name}"
            if isinstance(image, str):
                textures[name] = _inside(image, base, top, at, roots)


def network_scene(scene: Scene, root: Path = ASSETS, roots: Sequence[Path] | None = None) -> Scene:
    """`scene` with every file it names checked (see the module doc) and made absolute;
    raises NetworkSceneError (a ValueError) naming the first field refused. `roots`: the
    folders an absolute name may lie in (None: every task source's `asset_roots`)."""
    if roots is None:
        from metasim.scene.sources import asset_roots

        roots = asset_roots()
    roots = [Path(r).resolve() for r in roots]
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
    _walk(data, "scene", top, roots)
    return Scene.model_validate(data)
