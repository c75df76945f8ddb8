"""Observation arrays in the form asked for, and images that stay on the device.

With `backend=warp render=warp` the physics, the camera rig and its frames live on one
Warp device. A vector env switched to device images (`MetasimVectorEnv.use_device_images`,
what the evaluator does for a policy that declares `device_images = True`) hands the
policy each view as a torch tensor on that device, made from the rig's frame buffers by
DLPack (no copy) and cloned there (a device copy: the rig overwrites its buffers
at the next render, and an observation may be kept across steps). No frame reaches the
host; the robot state, rewards and episode numbers stay host arrays as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metasim.envs.noise import RuntimeNoise


def device_refusal(backend: str, renderer: str, noise: RuntimeNoise) -> str:
    """Why images cannot stay on the device for this env ("" when they can)."""
    if backend != "warp" or renderer != "warp":
        return (
            f"images stay on the device only with backend=warp render=warp (here "
            f"backend={backend} render={renderer}): the rig and the physics share the device"
        )
    if noise.image_noise or noise.image_blur:
        return "runtime image noise and blur are applied on the host (noise.image_noise/blur)"
    try:
        import torch  # noqa: F401
    except ModuleNotFoundError:
        return "torch is not installed (the torch extra)"
    return ""


def device_frames(rig: Any) -> list[Any]:
    """Every view of the warp rig `rig` as torch tensors on its device (no host copy).
    Through DLPack, zero copy on CUDA and on Warp's CPU device alike (`wp.to_torch` is
    DLPack's zero copy on CUDA, but goes through NumPy's array interface on the CPU)."""
    import torch
    import warp as wp

    return [torch.from_dlpack(wp.to_dlpack(f)).clone() for f in rig.render(on_device=True)]


def as_array_type(value: Any, array_type: str, device: str) -> Any:
    """`value` (an array or a dict of them) as `array_type`: numpy as it is, or torch
    tensors on `device` (a tensor already made, e.g. a device image, is moved only if it
    is elsewhere)."""
    if array_type == "numpy":
        return value
    import torch

    if isinstance(value, dict):
        return {k: as_array_type(v, array_type, device) for k, v in value.items()}
    if isinstance(value, torch.Tensor):
        return value.to(device)
    return torch.from_numpy(np.ascontiguousarray(value)).to(device)


def host_array(actions: Any) -> np.ndarray:
    """Actions (a torch tensor, on any device, or an array) as float64 NumPy."""
    if hasattr(actions, "detach"):
        actions = actions.detach().cpu().numpy()
    return np.asarray(actions, dtype=np.float64)


__all__ = ["as_array_type", "device_frames", "device_refusal", "host_array"]
