"""The warp rig's images resolved on the device: packed sub-pixels to the views' frames.

MuJoCo Warp's ray tracer writes each camera's pixels packed (0xAARRGGBB, one uint32 a
pixel) into one buffer per render context, at n x the view's size when the rig
anti-aliases with n x n sub-pixels. Copying that buffer to the host and averaging there
moves n² x 4/3 the bytes of the frames and spends the host's time on the mean: at 1,024
LIBERO worlds x 2 cameras of 224² with 2 x 2 sub-pixels, 1.6 GB a render, which kept an
H200 at 87 frames/s. Two kernels (`kernels.resolve_rgb`, `kernels.resolve_depth`)
average the n x n blocks and unpack RGB on the device, so only the frames travel
(`WarpRig` copies each once). The mean is rounded as `numpy.rint` rounds the float mean
of the host path (half to even; sums of at most 16 bytes are exact): the same bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import warp as wp

from metasim.sim.warp.kernels import resolve_depth, resolve_rgb


class FrameResolver:
    """One render context's views as frames on the device, then one copy each to the host.

    Targets are (camera, width, height); each target's output array is allocated once
    and reused by every later call."""

    def __init__(self, nworld: int, n: int, device: Any) -> None:
        self.nworld, self.n, self.device = nworld, n, device
        self._out: dict[tuple[Any, bool], Any] = {}

    def _buffer(self, key: tuple[Any, bool], shape: tuple[int, ...], dtype: Any) -> Any:
        buf = self._out.get(key)
        if buf is None:
            buf = self._out[key] = wp.empty(shape, dtype=dtype, device=self.device)
        return buf

    def rgb(self, packed: Any, adr: int, target: tuple[str, int, int]) -> Any:
        """The device array (nworld, H, W, 3) uint8 of `target` (packed at `adr`)."""
        _, w, h = target
        out = self._buffer((target, False), (self.nworld, h, w, 3), wp.uint8)
        wp.launch(
            resolve_rgb,
            dim=(self.nworld, h, w),
            inputs=[packed, int(adr), w, self.n],
            outputs=[out],
            device=self.device,
        )
        return out

    def depth(self, data: Any, adr: int, target: tuple[str, int, int]) -> Any:
        """The device array (nworld, H, W) float32 of `target`'s depth (at `adr`)."""
        _, w, h = target
        out = self._buffer((target, True), (self.nworld, h, w), wp.float32)
        wp.launch(
            resolve_depth,
            dim=(self.nworld, h, w),
            inputs=[data, int(adr), w, self.n],
            outputs=[out],
            device=self.device,
        )
        return out


def host(array: Any) -> np.ndarray:
    """A device array's values on the host, in memory of their own (CUDA refuses implicit
    conversion). `numpy()` copies from CUDA; on Warp's CPU device it returns a view of
    the array, which the next render would overwrite under a caller that kept a frame:
    copied here."""
    out = np.asarray(array.numpy())
    return out.copy() if array.device.is_cpu else out


__all__ = ["FrameResolver", "host"]
