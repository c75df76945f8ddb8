"""A policy's image preprocessing on the device (`ImageSpec.finish_torch`, the device-image
path of issue 45) against the host path (`ImageSpec.finish`, PIL): the presets'
conventions (origin, rotation, layout) byte for byte; resizing (PIL's box filter as a
weight matrix, torch's antialiased bilinear) within one grey level of PIL's. On torch's
CPU device; the same ops run on CUDA."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("torch", reason="the torch extra is not installed")

import torch

from metasim.policies.images import ImageSpec

SIZES = [(40, 30), (32, 32), (56, 56), (160, 120), (80, 60)]  # from 80 x 60 frames


def _frames() -> np.ndarray:
    """(3, 60, 80, 3) uint8 frames: smooth colour fields plus pixel noise."""
    rng = np.random.default_rng(0)
    coarse = rng.integers(0, 256, (3, 12, 16, 3)).astype(np.uint8)
    smooth = [
        np.asarray(Image.fromarray(c).resize((80, 60), Image.Resampling.BICUBIC)) for c in coarse
    ]
    noisy = np.stack(smooth).astype(int) + rng.integers(-10, 10, (3, 60, 80, 3))
    return np.clip(noisy, 0, 255).astype(np.uint8)


@pytest.mark.parametrize(
    "origin,rotate,layout",
    [("top", 0, "hwc_uint8"), ("bottom", 180, "chw_float"), ("bottom", 90, "hwc_uint8")],
)
def test_conventions_are_exact(origin: str, rotate: int, layout: str) -> None:
    frames = _frames()
    spec = ImageSpec(camera="c", origin=origin, rotate=rotate, layout=layout)  # type: ignore[arg-type]
    host = spec.finish(frames)
    device = spec.finish_torch(torch.from_numpy(frames))
    assert device.is_contiguous()
    np.testing.assert_array_equal(device.numpy(), host)


def test_resizes_within_one_level_of_pil() -> None:
    frames = _frames()
    worst = {}
    for mode, filt, size in itertools.product(
        ["resize", "resize_with_pad", "center_crop"], ["box", "bilinear"], SIZES
    ):
        spec = ImageSpec.model_validate(
            {"camera": "c", "size": size, "resize": mode, "filter": filt, "origin": "bottom",
             "rotate": 90}
        )  # fmt: skip
        host = spec.finish(frames)
        device = spec.finish_torch(torch.from_numpy(frames)).numpy()
        assert device.shape == host.shape and device.dtype == host.dtype
        diff = np.abs(device.astype(int) - host.astype(int))
        worst[(mode, filt, size)] = (int(diff.max()), float(diff.mean()))
    assert max(w[0] for w in worst.values()) <= 1, worst
    assert max(w[1] for w in worst.values()) < 0.6, worst  # most pixels are equal


def test_depth_follows_the_image() -> None:
    rng = np.random.default_rng(1)
    depth = rng.random((2, 60, 80)).astype(np.float32)
    spec = ImageSpec(camera="c", origin="bottom", rotate=270, depth=True)
    np.testing.assert_array_equal(
        spec.finish_torch(torch.from_numpy(depth)).numpy(), spec.finish_depth(depth)
    )
    sized = ImageSpec(camera="c", size=(40, 30), resize="resize", depth=True)
    got = sized.finish_torch(torch.from_numpy(depth)).numpy()
    assert got.shape == sized.finish_depth(depth).shape == (2, 30, 40)
    assert set(np.unique(got)) <= set(np.unique(depth))  # nearest: values of the map
