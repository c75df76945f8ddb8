"""Read a nerfstudio dataset folder: `transforms.json` next to its images.

This is what a phone scan usually becomes: Polycam and Record3D exports processed by
nerfstudio, or `ns-process-data` on a video. Fields read (nerfstudio's documented schema):

- intrinsics `fl_x`, `fl_y`, `cx`, `cy`, `w`, `h`, at the top level and/or per frame (a
  frame's own value overrides the top level's; all frames must then agree, metasim recon
  takes one camera); `camera_model` (a pinhole model: `PINHOLE`, `SIMPLE_PINHOLE`,
  `OPENCV`, or none) with distortion `k1`, `k2`, `k3`, `p1`, `p2` (OpenCV's radial and
  tangential model, which `metasim.recon.undistort` removes; `k4` must be 0);
- per frame: `file_path` (the image, relative to the folder), `transform_matrix`
  (camera-to-world, 4x4 or 3x4, OpenGL camera axes: +x right, +y up, looking along -z)
  and optional `depth_file_path` (on every frame or on none).

Depth files hold millimetres, as nerfstudio's dataparser assumes
(`depth_unit_scale_factor` 1e-3): a 16-bit PNG or a `.npy` is multiplied by `DEPTH_UNIT`.
nerfstudio's pixel centres lie at +0.5 (COLMAP's convention); metasim's at integers
(OpenCV's), so `cx` and `cy` are shifted by half a pixel. Ignored: `mask_path`,
`applied_transform`, `applied_scale`, `orientation_override`, `ply_file_path`, the
train/eval split lists and downscaled `images_N/` folders. Every problem is a
`MetasimInputError` naming transforms.json (and the frame) or the missing file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from metasim.errors import MetasimInputError
from metasim.guards import load_json
from metasim.recon.camera import CV_TO_GL, Intrinsics

TRANSFORMS = "transforms.json"
DEPTH_UNIT = 1e-3  # metres per depth-file unit: nerfstudio's default depth_unit_scale_factor
INTRINSIC_KEYS = ("fl_x", "fl_y", "cx", "cy", "w", "h")
DISTORTION_KEYS = ("k1", "k2", "k3", "k4", "p1", "p2")
CAMERA_KEYS = INTRINSIC_KEYS + DISTORTION_KEYS
PINHOLE_MODELS = ("PINHOLE", "SIMPLE_PINHOLE", "OPENCV")
HINT = "A nerfstudio folder holds transforms.json and its images; see docs/recon.md"


@dataclass(frozen=True)
class NerfstudioScan:
    """A parsed folder: image files (N,), depth files (N,) or (), one camera, its
    distortion in OpenCV's order (k1, k2, p1, p2, k3; None when all 0), and camera-to-world
    poses (N, 4, 4) in the OpenCV convention, frames sorted by file."""

    frames: tuple[Path, ...]
    depths: tuple[Path, ...]
    intrinsics: Intrinsics
    distortion: tuple[float, ...] | None
    poses: np.ndarray


def is_nerfstudio(path: Path) -> bool:
    return path.is_dir() and (path / TRANSFORMS).is_file()


def read_scan(folder: Path) -> NerfstudioScan:
    """Parse FOLDER/transforms.json and check that every file it names exists."""
    source = str(folder / TRANSFORMS)
    meta = load_json(folder / TRANSFORMS)
    if not isinstance(meta, dict) or not isinstance(meta.get("frames"), list):
        raise MetasimInputError(source, ["expected a JSON object with a 'frames' list"], HINT)
    if not meta["frames"]:
        raise MetasimInputError(source, ["frames: the list is empty"], HINT)
    _check_camera_model(source, meta)
    entries = [_frame(source, meta, k, f) for k, f in enumerate(meta["frames"])]
    entries.sort(key=lambda e: str(e["file"]))
    with_depth = [e for e in entries if e["depth"] is not None]
    if with_depth and len(with_depth) != len(entries):
        missing = next(e["where"] for e in entries if e["depth"] is None)
        raise MetasimInputError(
            source,
            [f"{missing}: no depth_file_path, but other frames have one (all or none)"],
        )
    intr, distortion = _one_camera(source, entries)
    for e in entries:
        _exists(source, folder / e["file"], f"{e['where']}.file_path")
        if e["depth"] is not None:
            _exists(source, folder / e["depth"], f"{e['where']}.depth_file_path")
    return NerfstudioScan(
        frames=tuple(folder / e["file"] for e in entries),
        depths=tuple(folder / e["depth"] for e in with_depth),
        intrinsics=intr,
        distortion=distortion,
        poses=np.stack([e["pose"] for e in entries]),
    )


def _check_camera_model(source: str, meta: dict[str, Any]) -> None:
    model = meta.get("camera_model", "OPENCV")
    if model not in PINHOLE_MODELS:
        raise MetasimInputError(
            source,
            [
                f"camera_model: expected a pinhole model ({', '.join(PINHOLE_MODELS)}), "
                f"got {model!r}"
            ],
            "Fisheye and 360 images must be undistorted to a pinhole camera first",
        )


def _frame(source: str, meta: dict[str, Any], k: int, frame: Any) -> dict[str, Any]:
    """One frame's file, depth file, pose (OpenCV) and intrinsics values."""
    where = f"frames[{k}]"
    if not isinstance(frame, dict):
        raise MetasimInputError(source, [f"{where}: expected an object"], HINT)
    file = frame.get("file_path")
    if not isinstance(file, str) or not file:
        raise MetasimInputError(source, [f"{where}.file_path: missing (the image's path)"], HINT)
    where = f"{where} ({file})"
    depth = frame.get("depth_file_path")
    if depth is not None and (not isinstance(depth, str) or not depth):
        raise MetasimInputError(source, [f"{where}.depth_file_path: expected a path"])
    values: dict[str, Any] = {k: frame.get(k, meta.get(k)) for k in CAMERA_KEYS}
    missing = [key for key in INTRINSIC_KEYS if not _number(values[key])]
    if missing:
        raise MetasimInputError(
            source,
            [
                f"{where}: no number for {', '.join(missing)} (expected fl_x, fl_y, cx, cy, w, "
                "h at the top level or on the frame)"
            ],
            HINT,
        )
    bad = [k for k in DISTORTION_KEYS if values[k] is not None and not _number(values[k])]
    if bad or values["k4"] not in (None, 0, 0.0):
        raise MetasimInputError(
            source,
            [
                f"{where}: distortion {', '.join(f'{k}={values[k]!r}' for k in bad or ['k4'])}: "
                "expected numbers k1, k2, k3, p1, p2 (OpenCV's model) and k4 = 0"
            ],
            "k4 belongs to fisheye models: undistort the images to a pinhole camera first",
        )
    return {
        "file": file,
        "depth": depth,
        "where": where,
        "pose": _pose(source, where, frame.get("transform_matrix")),
        "camera": tuple(float(values[key] or 0.0) for key in CAMERA_KEYS),
    }


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _pose(source: str, where: str, matrix: Any) -> np.ndarray:
    """A 4x4 (or 3x4) OpenGL camera-to-world as a (4, 4) OpenCV camera-to-world."""
    expected = "expected a 4x4 (or 3x4) camera-to-world matrix of numbers"
    try:
        mat = np.asarray(matrix, dtype=np.float64)
    except (ValueError, TypeError):
        raise MetasimInputError(source, [f"{where}.transform_matrix: {expected}"]) from None
    if mat.shape not in ((4, 4), (3, 4)):
        got = "missing" if matrix is None else f"shape {mat.shape}"
        raise MetasimInputError(source, [f"{where}.transform_matrix: {expected}, got {got}"])
    if not np.isfinite(mat).all():
        row, col = (int(i) for i in np.argwhere(~np.isfinite(mat))[0])
        raise MetasimInputError(
            source,
            [
                f"{where}.transform_matrix[{row}][{col}]: expected a finite number, "
                f"got {mat[row, col]}"
            ],
        )
    pose = np.eye(4)
    pose[:3] = mat[:3]
    rot = pose[:3, :3]
    if mat.shape == (4, 4) and not np.allclose(mat[3], [0, 0, 0, 1], atol=1e-6):
        raise MetasimInputError(
            source, [f"{where}.transform_matrix: the last row must be [0, 0, 0, 1]"]
        )
    if not np.allclose(rot.T @ rot, np.eye(3), atol=1e-3) or np.linalg.det(rot) < 0:
        raise MetasimInputError(
            source,
            [f"{where}.transform_matrix: the 3x3 block is not a rotation (R^T R != I or det < 0)"],
        )
    pose[:3, :3] = rot @ CV_TO_GL  # OpenGL camera axes -> OpenCV (x right, y down, z ahead)
    return pose


def _one_camera(
    source: str, entries: list[dict[str, Any]]
) -> tuple[Intrinsics, tuple[float, ...] | None]:
    """The shared intrinsics (OpenCV pixel centres) and distortion (k1, k2, p1, p2, k3, or
    None when all 0); every frame must have the same."""
    first = entries[0]["camera"]
    for e in entries[1:]:
        if not np.allclose(e["camera"], first, rtol=1e-6, atol=1e-9):
            diff = [
                f"{k}={b} (not {a})"
                for k, a, b in zip(CAMERA_KEYS, first, e["camera"], strict=True)
                if not math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
            ]
            raise MetasimInputError(
                source,
                [
                    f"{e['where']}: {', '.join(diff)}: metasim recon needs one camera, "
                    f"every frame with the intrinsics of {entries[0]['where']}"
                ],
            )
    fx, fy, cx, cy, w, h, k1, k2, k3, _, p1, p2 = first
    if min(fx, fy, w, h) <= 0 or w != int(w) or h != int(h):
        raise MetasimInputError(
            source, ["fl_x, fl_y must be > 0 and w, h whole numbers of pixels > 0"]
        )
    distortion = (k1, k2, p1, p2, k3) if any((k1, k2, k3, p1, p2)) else None
    return Intrinsics(fx, fy, cx - 0.5, cy - 0.5, int(w), int(h)), distortion


def _exists(source: str, path: Path, field: str) -> None:
    """`path` (named by `field`) is a file inside the scan's folder: its resolved path (links
    followed) lies under the folder's, so a scan never reads a file it does not hold."""
    folder = Path(source).parent
    try:
        inside = path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError) as exc:  # a link loop
        raise MetasimInputError(source, [f"{field}: not a usable path ({exc})"]) from None
    if not inside:
        raise MetasimInputError(
            source,
            [f"{field}: {path} lies outside the scan's folder {folder}"],
            "Every file a scan names must be inside its folder; copy the file in",
        )
    if not path.is_file():
        raise MetasimInputError(str(path), [f"no such file (named by {field} in {source})"], HINT)
