"""Read what `metasim recon` is given: a capture folder, a nerfstudio folder, a video,
or images.

A capture folder holds `rgb/` (PNG/JPEG), `depth/` (16-bit PNG in millimetres or
`.npy` in metres, one per RGB frame, same size, matched by sorted order),
`intrinsics.json` (fx, fy, cx, cy, width, height) and optionally `poses.json`
(camera-to-world 4x4 per frame, OpenCV convention unless `"convention": "opengl"`).
Without `depth/` it is an RGB scan with known poses: then `poses.json` is required.
A folder with `transforms.json` is a nerfstudio dataset (`metasim.recon.nerfstudio`).
Every problem is a `MetasimInputError` naming the file and what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image, UnidentifiedImageError

from metasim.errors import MetasimInputError
from metasim.guards import image_size, load_json, load_npy
from metasim.recon.camera import CV_TO_GL, Intrinsics
from metasim.recon.nerfstudio import DEPTH_UNIT, TRANSFORMS, is_nerfstudio
from metasim.recon.nerfstudio import read_scan as read_nerfstudio

IMAGE_EXT = (".png", ".jpg", ".jpeg")
VIDEO_EXT = (".mp4", ".mov", ".m4v", ".avi", ".mkv")
DEPTH_EXT = (".png", ".npy")
FORMAT_HINT = (
    "An RGB-D capture folder holds rgb/, depth/ (16-bit PNG in mm or .npy in m), "
    "intrinsics.json and optionally poses.json; see docs/recon.md"
)


@dataclass(frozen=True)
class Source:
    """What the input is: `rgbd` (depth with every frame), `video` (a file) or `images`
    (RGB frames; with `poses` when the folder gives them), and what the folder declares."""

    kind: Literal["rgbd", "video", "images"]
    path: Path
    frames: tuple[Path, ...] = ()  # image files (rgbd: rgb/, images: the folder)
    depths: tuple[Path, ...] = ()
    image_dir: Path | None = None  # the folder frame names are relative to (default: path)
    camera_file: Path | None = None  # the file the intrinsics come from (named in errors)
    intrinsics: Intrinsics | None = None
    poses: np.ndarray | None = None  # (N, 4, 4) camera-to-world (OpenCV), one per frame
    depth_unit: float | None = None  # metres per depth-file unit (None: by file type)
    format: str = "metasim"  # or "nerfstudio"
    distortion: tuple[float, ...] | None = None  # OpenCV's k1, k2, p1, p2, k3 (None: none)

    @property
    def folder(self) -> Path:
        return self.image_dir or self.path

    def name(self, frame: Path) -> str:
        """A frame's name: its path relative to `folder` (unique, POSIX)."""
        return frame.relative_to(self.folder).as_posix()


def detect(path: Path) -> Source:
    """Classify the input and list its frame files; raise on what cannot be used."""
    if not path.exists():
        raise MetasimInputError(str(path), ["no such file or folder"])
    if path.is_file():
        if path.suffix.lower() not in VIDEO_EXT:
            raise MetasimInputError(
                str(path),
                [
                    f"expected a video ({', '.join(VIDEO_EXT)}) or a folder, "
                    f"got a {path.suffix} file"
                ],
            )
        return Source("video", path)
    if is_nerfstudio(path):
        return _nerfstudio_source(path)
    if (path / "rgb").is_dir() or (path / "depth").is_dir():
        return _rgbd_source(path)
    frames = _images_in(path)
    if not frames:
        raise MetasimInputError(
            str(path),
            ["the folder is empty: expected rgb/ and depth/ (an RGB-D capture) or images"],
            FORMAT_HINT,
        )
    _check_count(path, frames)
    return Source("images", path, frames)


def _check_count(folder: Path, frames: tuple[Path, ...]) -> None:
    """A scan of one frame has nothing to fuse or match: refuse it by name."""
    if len(frames) < 2:
        raise MetasimInputError(
            str(folder),
            [f"{len(frames)} frame ({frames[0].name}): a scan needs at least 2 views"],
            FORMAT_HINT,
        )


def _images_in(folder: Path) -> tuple[Path, ...]:
    return tuple(sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_EXT))


def _rgbd_source(path: Path) -> Source:
    rgb_dir, depth_dir = path / "rgb", path / "depth"
    frames = _images_in(rgb_dir) if rgb_dir.is_dir() else ()
    if not frames:
        raise MetasimInputError(
            str(rgb_dir), ["no RGB frames: expected PNG or JPEG images in rgb/"], FORMAT_HINT
        )
    depths = (
        tuple(sorted(p for p in depth_dir.iterdir() if p.suffix.lower() in DEPTH_EXT))
        if depth_dir.is_dir()
        else ()
    )
    _check_count(rgb_dir, frames)
    rgb_only = not depth_dir.exists() and (path / "poses.json").is_file()
    if len(depths) != len(frames) and not rgb_only:
        raise MetasimInputError(
            str(depth_dir),
            [
                f"expected one depth map (.png in mm or .npy in m) per RGB frame: "
                f"{len(frames)} RGB frames, {len(depths)} depth maps"
            ],
            FORMAT_HINT,
        )
    camera = path / "intrinsics.json"
    if not camera.is_file():
        raise MetasimInputError(
            str(camera),
            [
                "missing: a capture folder needs the camera intrinsics "
                '{"fx": .., "fy": .., "cx": .., "cy": .., "width": .., "height": ..}'
            ],
            FORMAT_HINT,
        )
    poses_file = path / "poses.json"
    poses = load_poses(poses_file, frames) if poses_file.is_file() else None
    kind: Literal["rgbd", "images"] = "images" if rgb_only else "rgbd"
    intr = load_intrinsics(camera)
    return Source(kind, path, frames, depths, rgb_dir, camera, intr, poses)


def _nerfstudio_source(path: Path) -> Source:
    scan = read_nerfstudio(path)
    kind: Literal["rgbd", "images"] = "rgbd" if scan.depths else "images"
    camera = path / TRANSFORMS
    return Source(
        kind,
        path,
        scan.frames,
        scan.depths,
        path,
        camera,
        scan.intrinsics,
        scan.poses,
        DEPTH_UNIT,
        "nerfstudio",
        scan.distortion,
    )


def load_intrinsics(path: Path) -> Intrinsics:
    """Parse intrinsics.json: fx, fy, cx, cy (pixels), width, height."""
    data = load_json(path)  # size and nesting bounded
    keys = ("fx", "fy", "cx", "cy", "width", "height")
    if not isinstance(data, dict):
        raise MetasimInputError(str(path), [f"expected a JSON object with {', '.join(keys)}"])
    missing = [k for k in keys if not isinstance(data.get(k), int | float)]
    if missing:
        raise MetasimInputError(
            str(path),
            [
                f"expected numbers for {', '.join(keys)}; missing or not numbers: "
                f"{', '.join(missing)}"
            ],
        )
    intr = Intrinsics(
        float(data["fx"]),
        float(data["fy"]),
        float(data["cx"]),
        float(data["cy"]),
        int(data["width"]),
        int(data["height"]),
    )
    bad = [k for k in keys if not (np.isfinite(data[k]) and (k in ("cx", "cy") or data[k] > 0))]
    if bad:
        raise MetasimInputError(
            str(path),
            [f"{', '.join(bad)}: expected finite numbers (fx, fy, width and height > 0)"],
        )
    if intr.width * intr.height > 100_000_000 or intr.width != data["width"]:
        raise MetasimInputError(
            str(path),
            [f"width, height: expected whole pixel counts, got {intr.width}x{intr.height}"],
        )
    return intr


def load_poses(path: Path, frames: tuple[Path, ...]) -> np.ndarray:
    """(N, 4, 4) camera-to-world (OpenCV) per frame from poses.json.

    Accepted: a list of 4x4 matrices in frame order, or `{"convention": "opencv" |
    "opengl", "frames": [{"file": name, "camera_to_world": 4x4}, ...]}`."""
    data = load_json(path)  # size and nesting bounded
    convention = "opencv"
    if isinstance(data, dict):
        convention = str(data.get("convention", "opencv"))
        entries = data.get("frames")
        if not isinstance(entries, list):
            raise MetasimInputError(str(path), ["expected a 'frames' list"])
        by_name = {
            str(e.get("file")): e.get("camera_to_world") for e in entries if isinstance(e, dict)
        }
        mats = [by_name.get(f.name) for f in frames]
    elif isinstance(data, list):
        mats = list(data)
    else:
        raise MetasimInputError(str(path), ["expected a list of 4x4 matrices or {'frames': [...]}"])
    if convention not in ("opencv", "opengl"):
        raise MetasimInputError(
            str(path), [f"convention: expected opencv or opengl, got {convention!r}"]
        )
    if len(mats) != len(frames) or any(m is None for m in mats):
        raise MetasimInputError(
            str(path), [f"expected one camera-to-world 4x4 per RGB frame ({len(frames)} frames)"]
        )
    try:
        poses = np.asarray(mats, dtype=np.float64).reshape(len(frames), 4, 4)
    except (ValueError, TypeError):
        raise MetasimInputError(str(path), ["every pose must be a 4x4 matrix of numbers"]) from None
    check_rigid(path, poses, frames)
    if convention == "opengl":
        poses[:, :3, :3] = poses[:, :3, :3] @ CV_TO_GL
    return poses


def check_rigid(path: Path, poses: np.ndarray, frames: tuple[Path, ...]) -> None:
    """Each (4, 4) pose must be finite and rigid: a rotation (R^T R = I, det R = +1) and
    a last row of 0 0 0 1; a zero, scaled or NaN matrix would be fused silently."""
    finite = np.isfinite(poses).all(axis=(1, 2))
    rot = np.where(finite[:, None, None], poses, 0.0)[:, :3, :3]
    ortho = np.abs(rot.transpose(0, 2, 1) @ rot - np.eye(3)).max(axis=(1, 2)) < 1e-3
    proper = np.abs(np.linalg.det(rot) - 1.0) < 1e-3
    row = np.abs(np.where(finite[:, None], poses[:, 3], 0.0) - [0, 0, 0, 1]).max(axis=1) < 1e-6
    bad = np.flatnonzero(~(finite & ortho & proper & row))
    if bad.size:
        i = int(bad[0])
        why = "has NaN or inf" if not finite[i] else "is not rigid (a rotation + translation)"
        raise MetasimInputError(
            str(path),
            [f"{bad.size} pose(s) unusable; the first, frame {i} ({frames[i].name}), {why}"],
            "Each camera_to_world must be [[R, t], [0, 0, 0, 1]] with R a rotation",
        )


def read_rgb(path: Path) -> np.ndarray:
    """(H, W, 3) uint8; the header's size is checked before the pixels are decoded."""
    image_size(path)
    try:
        with Image.open(path) as img:
            return np.asarray(img.convert("RGB"))
    except (OSError, UnidentifiedImageError) as exc:
        raise MetasimInputError(str(path), [f"not a readable image ({exc})"]) from None


def read_depth(path: Path, unit: float | None = None) -> np.ndarray:
    """(H, W) float32 metres; 0 = none. With `unit` (metres per stored value, e.g. a
    nerfstudio folder's 1e-3) any file is scaled by it; without, a 16-bit PNG holds
    millimetres and a .npy metres."""
    if path.suffix.lower() == ".npy":
        depth = load_npy(path, "depth map").astype(np.float32) * (unit or 1.0)
    else:
        image_size(path)
        try:
            with Image.open(path) as img:
                raw = np.asarray(img)
        except (OSError, UnidentifiedImageError) as exc:
            raise MetasimInputError(str(path), [f"not a readable image ({exc})"]) from None
        if raw.dtype != np.uint16 and not np.issubdtype(raw.dtype, np.int32):
            raise MetasimInputError(
                str(path),
                [f"expected a 16-bit PNG of depth in millimetres, got {raw.dtype} pixels"],
            )
        depth = raw.astype(np.float32) * (unit or 1e-3)
    if depth.ndim != 2:
        raise MetasimInputError(str(path), [f"expected a 2-D depth map, got shape {depth.shape}"])
    depth = np.nan_to_num(depth.astype(np.float32), nan=0.0, posinf=0.0, neginf=0.0)
    if not (depth > 0).any():
        raise MetasimInputError(
            str(path), ["no valid depth: every pixel is 0, negative, NaN or inf"], FORMAT_HINT
        )
    return depth


def check_depth_size(depth_path: Path, depth: np.ndarray, rgb_path: Path, rgb: np.ndarray) -> None:
    if depth.shape != rgb.shape[:2]:
        h, w = rgb.shape[:2]
        raise MetasimInputError(
            str(depth_path),
            [
                f"depth map is {depth.shape[1]}x{depth.shape[0]} but its RGB frame {rgb_path.name} "
                f"is {w}x{h}: expected the same size"
            ],
            "Resize the RGB frames (and the intrinsics) to the depth resolution",
        )


def check_intrinsics_size(path: Path, intr: Intrinsics, rgb_path: Path, rgb: np.ndarray) -> None:
    h, w = rgb.shape[:2]
    if (intr.width, intr.height) != (w, h):
        raise MetasimInputError(
            str(path),
            [
                f"width/height {intr.width}x{intr.height} do not match the RGB frames "
                f"({rgb_path.name} is {w}x{h})"
            ],
        )
