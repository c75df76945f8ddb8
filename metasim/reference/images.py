"""Image agreement measures shared by the parity checks, the renderer comparisons and the
scan reconstruction: PSNR and mean absolute error of uint8 images or image stacks."""

from __future__ import annotations

import numpy as np


def psnr(a: np.ndarray, b: np.ndarray, cap: float | None = None) -> float:
    """Peak signal-to-noise ratio (dB, peak 255) of two uint8 images or stacks of the same
    shape, over all pixels and channels. Equal images give infinity, or `cap` when given
    (a finite figure for tables and JSON); so does any value above `cap`."""
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    value = float("inf") if mse == 0.0 else float(10.0 * np.log10(255.0**2 / mse))
    return value if cap is None else min(cap, value)


def mae(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute error (0-255) of two uint8 images or stacks of the same shape."""
    return float(np.mean(np.abs(a.astype(np.float64) - b.astype(np.float64))))


__all__ = ["mae", "psnr"]
