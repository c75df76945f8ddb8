"""A scene's scanned background (`background:`, `render_schema.BackgroundSpec`): its splat
file resolved against the scene's folder, read and placed in the scene frame, checked
when the scene loads (a malformed file is an input error naming `background.splats`),
and described for a run's manifest and summary.

`load_background` caches the placed splats per file (path, size, mtime) and transform,
so the cells of a grid and the camera rigs of one process read each file once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from metasim.errors import MetasimInputError
from metasim.errors import one_line as _one_line
from metasim.scene.render_schema import BackgroundSpec
from metasim.scene.schema import Scene
from metasim.splats import Splats, read_splat_ply

Issue = tuple[tuple[int | str, ...], str]


def splat_path(spec: BackgroundSpec, base_dir: Path | None) -> Path:
    """The splat file of `spec`: as given if absolute, else relative to `base_dir`
    (the scene's folder; the working directory when None)."""
    path = Path(spec.splats)
    return path if path.is_absolute() else (base_dir or Path.cwd()) / path


def load_background(spec: BackgroundSpec, base_dir: Path | None) -> Splats:
    """The splats of `spec` in the scene frame (input error naming the file if bad)."""
    path = splat_path(spec, base_dir).resolve()
    stat = path.stat() if path.is_file() else None
    key = (stat.st_size, stat.st_mtime_ns) if stat else (-1, -1)
    return _placed(str(path), key, spec.pos, spec.quat, spec.scale)


@lru_cache(maxsize=8)
def _placed(
    path: str,
    key: tuple[int, int],
    pos: tuple[float, ...],
    quat: tuple[float, ...],
    scale: float,
) -> Splats:
    del key  # part of the cache key only: a rewritten file is read again
    splats = read_splat_ply(path)
    return splats.transformed(np.asarray(pos), np.asarray(quat), scale)


@lru_cache(maxsize=64)
def _sha256(path: str, key: tuple[int, int]) -> str:
    del key
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def background_issues(scene: Scene, base_dir: Path, files: bool = True) -> Iterator[Issue]:
    """What is wrong with the scene's background: a fallback naming no object, a splat
    file that is missing or not a splat file (the reader's reason, one line)."""
    bg = scene.background
    if bg is None:
        return
    objects = [o.name for o in scene.objects]
    if bg.fallback is not None and bg.fallback not in objects:
        have = ", ".join(objects) or "none"
        yield (
            ("background", "fallback"),
            f"names object {bg.fallback!r}, which the scene does not have (it has {have})",
        )
    if not files:
        return
    path = splat_path(bg, base_dir)
    if not path.is_file():
        why = f"file {bg.splats!r} does not exist (relative to {base_dir})"
        yield ("background", "splats"), why
        return
    try:
        load_background(bg, base_dir)
    except MetasimInputError as exc:
        why = _one_line("; ".join(exc.problems))
        yield ("background", "splats"), f"file {bg.splats!r} is not a splat file: {why}"
        return
    if len(load_background(bg, base_dir)) == 0:
        yield ("background", "splats"), f"file {bg.splats!r} holds no splats"


def fallback_geoms(model: mujoco.MjModel, fallback: str | None) -> np.ndarray:
    """Ids of the geoms of the object `fallback` (its body's subtree; a background's
    mesh fallback): what the warp renderer hides where it draws the splats."""
    if fallback is None:
        return np.zeros(0, dtype=np.int64)
    root = model.body(fallback).id
    inside = np.zeros(model.nbody, dtype=bool)
    for b in range(model.nbody):  # parents come before their children
        inside[b] = b == root or (b > 0 and inside[model.body_parentid[b]])
    return np.flatnonzero(inside[model.geom_bodyid])


def background_record(scene: Scene, base_dir: Path | None, renderer: str) -> dict[str, Any] | None:
    """What a run's images show behind the meshes with `renderer`, or None without a
    background: `kind` (`splats`: the warp renderer draws the file's splats; `mesh`: the
    OpenGL renderer draws the fallback object, or nothing where there is none), `file`,
    `sha256`, `n_splats`, `sh_rest_dropped` (the higher-order colour coefficients per
    splat the file had, which no renderer here draws) and the fallback's name."""
    bg = scene.background
    if bg is None:
        return None
    path = splat_path(bg, base_dir).resolve()
    stat = path.stat()
    splats = load_background(bg, base_dir)
    return {
        "kind": "splats" if renderer == "warp" else "mesh",
        "file": str(path),
        "sha256": _sha256(str(path), (stat.st_size, stat.st_mtime_ns)),
        "n_splats": len(splats),
        "sh_rest_dropped": splats.sh_rest,
        "fallback": bg.fallback,
    }


__all__ = [
    "background_issues",
    "background_record",
    "fallback_geoms",
    "load_background",
    "splat_path",
]
