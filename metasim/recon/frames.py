"""Stage 1: choose the frames to reconstruct from, by sharpness and spacing.

Sharpness is the variance of the Laplacian of the grey image (blurred frames score
low). The sequence is cut into `max_frames` equal runs and the sharpest frame of each
run is kept, so the kept frames are spread over the whole scan; frames far blurrier than
the rest (under `blur_ratio` of the median sharpness) are dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import cv2
import numpy as np

from metasim.errors import MetasimInputError
from metasim.guards import limit


def sharpness(rgb: np.ndarray) -> float:
    """Variance of the Laplacian of an (H, W, 3) uint8 image."""
    grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    return float(cv2.Laplacian(grey, cv2.CV_64F).var())


def select(scores: list[float], max_frames: int, blur_ratio: float = 0.3) -> list[int]:
    """Indices of the kept frames, in order: the sharpest of each of `max_frames` runs."""
    n = len(scores)
    if n == 0:
        return []
    s = np.asarray(scores)
    runs = np.array_split(np.arange(n), min(max_frames, n))
    keep = [int(r[np.argmax(s[r])]) for r in runs if len(r)]
    floor = blur_ratio * float(np.median(s[keep]))
    return [i for i in keep if s[i] >= floor]


def iter_video(path: Path) -> Iterator[np.ndarray]:
    """Decode a video's frames (H, W, 3) uint8 with the ffmpeg that imageio-ffmpeg ships."""
    import imageio_ffmpeg

    try:
        gen = imageio_ffmpeg.read_frames(str(path), pix_fmt="rgb24")
        meta = gen.__next__()
        width, height = meta["size"]
        if width * height > limit("METASIM_MAX_PIXELS"):  # checked before a frame is decoded
            raise MetasimInputError(
                str(path),
                [f"frames of {width}×{height} pixels, over the limit of METASIM_MAX_PIXELS"],
            )
        for raw in gen:
            yield np.frombuffer(raw, dtype=np.uint8).reshape(height, width, 3)
    except (OSError, RuntimeError, ValueError, KeyError, StopIteration) as exc:
        raise _bad_video(path, exc) from None


def _bad_video(path: Path, exc: BaseException) -> MetasimInputError:
    why = " ".join(str(exc).split())[:160]
    return MetasimInputError(
        str(path), [f"cannot be decoded as a video (expected H.264/HEVC .mp4 or .mov): {why}"]
    )


def resize_max(rgb: np.ndarray, max_side: int) -> np.ndarray:
    """Downscale so that the longer side is at most `max_side` (area interpolation)."""
    h, w = rgb.shape[:2]
    f = max_side / max(h, w)
    if f >= 1.0:
        return rgb
    return np.asarray(cv2.resize(rgb, (round(w * f), round(h * f)), interpolation=cv2.INTER_AREA))


def select_video(
    path: Path, max_frames: int, max_side: int, tick: Callable[[], None] | None = None
) -> tuple[list[int], list[np.ndarray]]:
    """Two passes over the video: score every frame, then decode the kept ones."""
    scores = []
    for frame in iter_video(path):
        scores.append(sharpness(resize_max(frame, 480)))
        if tick:
            tick()
    if not scores:
        raise MetasimInputError(str(path), ["the video has no frames"])
    keep = select(scores, max_frames)
    wanted = set(keep)
    frames = [resize_max(f, max_side) for i, f in enumerate(iter_video(path)) if i in wanted]
    return keep, frames
