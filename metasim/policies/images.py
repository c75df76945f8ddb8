"""Camera images in the form a policy was trained on: size, resize mode, rotation.

A policy config declares, per image it takes, the scene camera, the size (width, height),
the resize mode and a rotation:

- `resize_with_pad` (openpi): scale to fit inside the size keeping the aspect ratio,
  pad the rest with black, centered;
- `resize` (OpenVLA): stretch to the size;
- `center_crop`: scale to cover the size keeping the aspect ratio, crop the center.

Images are rendered at the resolution that mode needs (so a 224x224 policy image is
rendered at about 224 px, not downsampled from the camera's full size), then padded,
stretched or cropped, then rotated (counterclockwise, in 90° steps; some LIBERO
checkpoints were trained on images rotated 180°).

Where a policy's preprocessing must be reproduced exactly, `render` fixes the size the
camera is rendered at first (LIBERO's clients render 256² and shrink to 224²), `filter`
the resampling filter (`bilinear`, as openpi's `resize_with_pad` and LeRobot use, or
`box`, the default, as cv2.INTER_AREA), and `origin: bottom` hands the policy the frame
as robosuite returns it (OpenGL's bottom row first: LIBERO's datasets were recorded that
way, and openpi's LIBERO client then rotates it 180°).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

ResizeMode = Literal["resize_with_pad", "resize", "center_crop"]
MAX_SIDE = 4096  # an image's width or height: the bound of a scene camera's and of PIXELS
# a width or height in pixels: 0 would hand the policy empty images every step, a
# negative one fail every episode; bounded like the scene's cameras (4096² pixels is
# well under METASIM_MAX_PIXELS)
Side = Annotated[int, Field(ge=1, le=MAX_SIDE)]


class ImageSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    camera: str
    size: tuple[Side, Side] | None = Field(default=None, description="(width, height) in pixels")
    resize: ResizeMode = "resize_with_pad"
    rotate: Literal[0, 90, 180, 270] = 0
    layout: Literal["hwc_uint8", "chw_float"] = "hwc_uint8"
    depth: bool = False  # also send a depth image (metres, float32) under "<key>_depth"
    render: tuple[Side, Side] | None = Field(
        default=None, description="(width, height) to render at before fitting to `size`"
    )
    filter: Literal["box", "bilinear"] = "box"
    origin: Literal["top", "bottom"] = "top"

    def render_size(self, native: tuple[int, int]) -> tuple[int, int]:
        """(width, height) to render the camera at for this spec."""
        if self.render is not None:
            return self.render
        if self.size is None:
            return native
        cw, ch = native
        tw, th = self.size
        if self.resize == "resize":
            if cw * th == ch * tw:  # same aspect: render straight at the size
                return tw, th
            return native
        if self.resize == "resize_with_pad":  # the same rounding as fit_image
            scale = min(tw / cw, th / ch)
            return max(1, round(cw * scale)), max(1, round(ch * scale))
        scale = max(tw / cw, th / ch)
        return max(tw, math.ceil(cw * scale - 1e-6)), max(th, math.ceil(ch * scale - 1e-6))

    def finish(self, frames: np.ndarray) -> np.ndarray:
        """(B, H, W, 3) uint8 frames rendered at `render_size` to the policy's images."""
        out = frames[:, ::-1] if self.origin == "bottom" else frames
        if self.size is not None:
            out = np.stack([fit_image(f, self.size, self.resize, self.filter) for f in out])
        if self.rotate:
            out = np.rot90(out, k=self.rotate // 90, axes=(1, 2))
        if self.layout == "chw_float":
            return np.ascontiguousarray(np.moveaxis(out, -1, 1), dtype=np.float32) / 255.0
        return np.ascontiguousarray(out)

    def finish_depth(self, depth: np.ndarray) -> np.ndarray:
        out = depth[:, ::-1] if self.origin == "bottom" else depth
        if self.size is not None:
            out = np.stack([fit_image(d, self.size, self.resize) for d in depth])
        if self.rotate:
            out = np.rot90(out, k=self.rotate // 90, axes=(1, 2))
        return np.ascontiguousarray(out, dtype=np.float32)


def fit_image(
    img: np.ndarray, size: tuple[int, int], mode: ResizeMode, filter: str = "box"
) -> np.ndarray:
    """One (H, W, C) uint8 image or (H, W) float depth map to `size` = (width, height)."""
    tw, th = size
    h, w = img.shape[:2]
    if (w, h) == (tw, th):
        return img
    if mode == "resize":
        return _resample(img, tw, th, filter)
    if mode == "resize_with_pad":
        scale = min(tw / w, th / h)
        nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
        inner = _resample(img, nw, nh, filter)
        out = np.zeros((th, tw, *img.shape[2:]), dtype=img.dtype)
        y0, x0 = (th - nh) // 2, (tw - nw) // 2
        out[y0 : y0 + nh, x0 : x0 + nw] = inner
        return out
    scale = max(tw / w, th / h)
    nw, nh = max(tw, math.ceil(w * scale - 1e-6)), max(th, math.ceil(h * scale - 1e-6))
    big = _resample(img, nw, nh, filter)
    y0, x0 = (nh - th) // 2, (nw - tw) // 2
    return big[y0 : y0 + th, x0 : x0 + tw]


def _resample(img: np.ndarray, w: int, h: int, filter: str = "box") -> np.ndarray:
    if img.shape[1] == w and img.shape[0] == h:
        return img
    if img.dtype == np.uint8:
        # Box filter when shrinking (what cv2.INTER_AREA does), bilinear when growing,
        # unless bilinear is asked for (PIL's, as openpi's image_tools use it).
        shrink = w < img.shape[1] or h < img.shape[0]
        box = shrink and filter == "box"
        method = Image.Resampling.BOX if box else Image.Resampling.BILINEAR
        return np.asarray(Image.fromarray(img).resize((w, h), method))
    pil = Image.fromarray(np.asarray(img, dtype=np.float32), mode="F")
    return np.asarray(pil.resize((w, h), Image.Resampling.NEAREST))
