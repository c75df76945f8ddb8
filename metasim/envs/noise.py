"""Perturbations the env applies while stepping (the runtime axes of a perturbation grid)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np


@dataclass(frozen=True)
class RuntimeNoise:
    """Perturbations applied while stepping, drawn per episode from its seed.

    state_noise: std of Gaussian noise on proprioception and object poses (m, rad);
    image_noise: std of Gaussian pixel noise (0-255 scale); image_blur: std in pixels of a
    Gaussian blur of every camera image (before the pixel noise: a camera's softness,
    then its sensor noise); action_noise: std added to
    each action component; action_latency: control steps between a policy's action and
    its execution (the env repeats the last executed action meanwhile).
    """

    state_noise: float = 0.0
    image_noise: float = 0.0
    image_blur: float = 0.0
    action_noise: float = 0.0
    action_latency: int = 0

    @property
    def active(self) -> bool:
        """Whether any field differs from its nominal zero: derived from the fields, so a
        field a new runtime axis sets is covered without editing this."""
        return any(getattr(self, f.name) for f in fields(self))


def blur_images(images: np.ndarray, sigma: float) -> np.ndarray:
    """(B, H, W, C) uint8 images, each blurred by a Gaussian of std `sigma` pixels over H and
    W (borders mirrored, the kernel cut at 4 sigma), rounded back to uint8."""
    from scipy.ndimage import gaussian_filter

    out = gaussian_filter(images.astype(np.float32), sigma=(0, sigma, sigma, 0), mode="mirror")
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def perturb_images(
    policy: dict[str, np.ndarray],
    noise: RuntimeNoise,
    gauss: Callable[[float, tuple[int, ...]], np.ndarray],
) -> None:
    """Blur, then pixel noise, on every camera image (`*_rgb`) of the policy group, in
    place; `gauss(std, shape)` draws (B, *shape) noise from each env's episode generator."""
    if not (noise.image_blur or noise.image_noise):
        return
    for key in [k for k in policy if k.endswith("_rgb")]:
        images = np.asarray(policy[key])
        if noise.image_blur:
            images = blur_images(images, noise.image_blur)
        if noise.image_noise:
            noisy = images + gauss(noise.image_noise, images.shape[1:])
            images = np.clip(noisy, 0, 255).astype(np.uint8)
        policy[key] = images
