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
from typing import Annotated, Any, Literal

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
            out = np.stack([fit_image(d, self.size, self.resize) for d in out])
        if self.rotate:
            out = np.rot90(out, k=self.rotate // 90, axes=(1, 2))
        return np.ascontiguousarray(out, dtype=np.float32)

    def finish_torch(self, frames: Any) -> Any:
        """`finish` (or `finish_depth`, for a (B, H, W) float tensor) on a torch tensor,
        on its device (images that stay on the device, metasim.envs.device_images). The
        origin flip, the rotation and the layout are exact; a resize is done with torch
        (PIL's box filter as a weight matrix, else bilinear, antialiased when shrinking;
        depth: nearest), within one grey level of PIL's, not byte-equal."""
        import torch

        depth = frames.ndim == 3
        out = frames.flip(1) if self.origin == "bottom" else frames
        if self.size is not None and (out.shape[2], out.shape[1]) != tuple(self.size):
            out = _fit_torch(out[..., None] if depth else out, self.size, self.resize, self.filter)
            out = out[..., 0] if depth else out
        if self.rotate:
            out = torch.rot90(out, k=self.rotate // 90, dims=(1, 2))
        if depth:
            return out.to(torch.float32).contiguous()
        if self.layout == "chw_float":
            return out.permute(0, 3, 1, 2).to(torch.float32).contiguous() / 255.0
        return out.contiguous()


def _fit_torch(frames: Any, size: tuple[int, int], mode: ResizeMode, filter: str) -> Any:
    """(B, H, W, C) torch frames to `size` = (width, height) by `mode`, on their device."""
    import torch
    import torch.nn.functional as F

    tw, th = size
    _, h, w, _ = frames.shape
    if mode == "resize":
        nw, nh = tw, th
    elif mode == "resize_with_pad":
        scale = min(tw / w, th / h)
        nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    else:
        scale = max(tw / w, th / h)
        nw, nh = max(tw, math.ceil(w * scale - 1e-6)), max(th, math.ceil(h * scale - 1e-6))
    x = frames.permute(0, 3, 1, 2).to(torch.float32)
    shrink = nw < w or nh < h
    if frames.dtype.is_floating_point:  # depth
        x = F.interpolate(x, size=(nh, nw), mode="nearest")
    elif shrink and filter == "box":  # PIL's box: the mean of the pixels centred inside
        x = torch.einsum("oh,bchw,pw->bcop", _box(h, nh, x.device), x, _box(w, nw, x.device))
    else:
        x = F.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False, antialias=shrink)
    if not frames.dtype.is_floating_point:
        x = x.round().clamp(0, 255)
    x = x.to(frames.dtype).permute(0, 2, 3, 1)
    if mode == "resize":
        return x
    if mode == "resize_with_pad":
        out = torch.zeros((x.shape[0], th, tw, x.shape[3]), dtype=x.dtype, device=x.device)
        y0, x0 = (th - nh) // 2, (tw - nw) // 2
        out[:, y0 : y0 + nh, x0 : x0 + nw] = x
        return out
    y0, x0 = (nh - th) // 2, (nw - tw) // 2
    return x[:, y0 : y0 + th, x0 : x0 + tw]


def _box(n_in: int, n_out: int, device: Any) -> Any:
    """(n_out, n_in) weights of PIL's box filter from n_in pixels to n_out (shrinking),
    computed as PIL's `precompute_coeffs` does (in doubles, the same expressions)."""
    import torch

    scale = n_in / n_out
    centre = (torch.arange(n_out, dtype=torch.float64, device=device)[:, None] + 0.5) * scale
    j = torch.arange(n_in, dtype=torch.float64, device=device)[None, :]
    window = (j >= torch.floor(centre - scale * 0.5 + 0.5)) & (
        j < torch.floor(centre + scale * 0.5 + 0.5)
    )
    x = (j - centre + 0.5) * (1.0 / scale)
    inside = ((x > -0.5) & (x <= 0.5) & window).to(torch.float64)
    return (inside / inside.sum(dim=1, keepdim=True)).to(torch.float32)


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
