"""The quality report: the new scene rendered from the scan's camera poses next to the
input frames, with PSNR, and a PNG of a few views (input | render | difference)."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
from PIL import Image

from metasim.guards import replacing
from metasim.recon.camera import Intrinsics, add_scan_camera, render_views
from metasim.reference.images import psnr as psnr  # re-exported (recon.pipeline)


def scan_model(scene_file: Path) -> tuple[mujoco.MjModel, np.ndarray]:
    """The compiled scene with a movable scan camera, and the geoms that the scan could
    not have seen (robot, floor, the invisible table fixture): the ones to hide."""
    from metasim.scene import compile_file

    compiled = compile_file(str(scene_file))
    spec = compiled.spec
    assert spec is not None, "a scene file compiles from its MjSpec"
    add_scan_camera(spec)
    model = spec.compile()
    keep = {model.body(name).id for name in compiled.index.object_names}
    hidden = np.array([g for g in range(model.ngeom) if model.geom_bodyid[g] not in keep])
    return model, hidden


def render_scene(scene_file: Path, poses: np.ndarray, intr: Intrinsics) -> np.ndarray:
    """(N, H, W, 3) renders of the scene file from camera-to-scene poses (N, 4, 4)."""
    model, hidden = scan_model(scene_file)
    return render_views(model, poses, intr, hidden_geoms=hidden)


def compare_png(path: Path, frames: np.ndarray, renders: np.ndarray, max_rows: int = 4) -> None:
    """Write rows of input | render | |difference| for up to `max_rows` views."""
    pick = np.linspace(0, len(frames) - 1, min(max_rows, len(frames))).round().astype(int)
    rows = []
    for i in pick:
        diff = np.abs(frames[i].astype(np.int16) - renders[i].astype(np.int16)).astype(np.uint8)
        rows.append(np.concatenate([frames[i], renders[i], diff], axis=1))
    with replacing(path) as tmp:
        Image.fromarray(np.concatenate(rows, axis=0)).save(tmp, format="PNG")
