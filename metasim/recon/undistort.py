"""Undistort a scan's frames and depth maps to the pinhole camera that `metasim recon` uses.

A nerfstudio folder made by `ns-process-data` from raw images keeps COLMAP's lens
distortion (OpenCV's radial-tangential model: k1, k2, p1, p2, k3) and leaves the images as
shot. Every frame is resampled once, with the same camera matrix K, into
OUT/.recon/undistorted/ (colour bilinearly into PNG, depth with its nearest sample so
that no depth is invented at edges; pixels with no source become black / no depth). A
file already there and newer than its source is reused.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from metasim.errors import MetasimInputError
from metasim.guards import replacing
from metasim.recon import inputs as inp
from metasim.recon.camera import Intrinsics

Maps = tuple[np.ndarray, np.ndarray]


def undistort_source(src: inp.Source, folder: Path) -> inp.Source:
    """`src` with its frames (and depths) replaced by undistorted copies under `folder`;
    `src` itself when it declares no distortion."""
    if src.distortion is None or src.intrinsics is None:
        return src
    intr = src.intrinsics
    maps = _maps(intr, np.asarray(src.distortion, dtype=np.float64))
    frames = tuple(_frame(p, src, folder, maps) for p in src.frames)
    depths = tuple(_depth(p, src, folder, maps) for p in src.depths)
    return dataclasses.replace(src, frames=frames, depths=depths, image_dir=folder, distortion=None)


def _maps(intr: Intrinsics, dist: np.ndarray) -> Maps:
    """For each pixel of the pinhole image (H, W), where to sample the distorted one."""
    k = intr.matrix
    size = (intr.width, intr.height)
    mx, my = cv2.initUndistortRectifyMap(k, dist, np.eye(3), k, size, cv2.CV_32FC1)
    return np.asarray(mx), np.asarray(my)


def _target(path: Path, src: inp.Source, folder: Path, suffix: str) -> Path | None:
    """Where the undistorted copy goes; None when an up-to-date copy is there."""
    out = (folder / path.relative_to(src.folder)).with_suffix(suffix)
    if out.is_file() and out.stat().st_mtime_ns >= path.stat().st_mtime_ns:
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def _frame(path: Path, src: inp.Source, folder: Path, maps: Maps) -> Path:
    out = _target(path, src, folder, ".png")
    if out is not None:
        rgb = inp.read_rgb(path)
        assert src.camera_file is not None and src.intrinsics is not None
        inp.check_intrinsics_size(src.camera_file, src.intrinsics, path, rgb)
        flat = cv2.remap(rgb, maps[0], maps[1], cv2.INTER_LINEAR, borderValue=(0, 0, 0))
        with replacing(out) as tmp:
            Image.fromarray(flat).save(tmp, format="PNG")
    return (folder / path.relative_to(src.folder)).with_suffix(".png")


def _depth(path: Path, src: inp.Source, folder: Path, maps: Maps) -> Path:
    """The stored values (units unchanged) resampled; PNG stays 16-bit PNG, .npy .npy."""
    suffix = path.suffix.lower()
    out = _target(path, src, folder, suffix)
    if out is not None:
        raw = inp.read_depth(path, 1.0)  # the file's own units
        if raw.shape != maps[0].shape:
            h, w = maps[0].shape
            raise MetasimInputError(
                str(path),
                [f"depth map is {raw.shape[1]}x{raw.shape[0]}, expected {w}x{h} (w, h)"],
            )
        flat = cv2.remap(raw, maps[0], maps[1], cv2.INTER_NEAREST, borderValue=0)
        with replacing(out) as tmp:
            if suffix == ".npy":
                with open(tmp, "wb") as fh:
                    np.save(fh, flat)
            else:
                Image.fromarray(np.round(flat).astype(np.uint16)).save(tmp, format="PNG")
    return (folder / path.relative_to(src.folder)).with_suffix(suffix)
