"""What the MuJoCo Warp backend needs: a Warp device and a model MuJoCo Warp can put.

MuJoCo Warp runs on Warp's CPU device (kernels compiled by LLVM on first use, then cached
under ~/.cache/warp) as well as on CUDA. It simulates in float32, so its parity with
native MuJoCo (float64) is looser than MJX's (see tests/sim/test_warp_handler.py).
"""

from __future__ import annotations

from typing import Any

import mujoco

from metasim.sim.base import UnsupportedScene


def pick_device(device: str | None) -> str:
    """`device` if given, else CUDA when Warp sees a GPU, else "cpu"."""
    import warp as wp

    wp.init()
    if device is not None:
        return device
    return "cuda:0" if wp.get_cuda_device_count() > 0 else "cpu"


def put_model(model: mujoco.MjModel, name: str) -> Any:
    """The MuJoCo Warp model of `model`, or UnsupportedScene naming what it lacks."""
    import mujoco_warp as mjw

    try:
        return mjw.put_model(model)
    except NotImplementedError as exc:
        raise UnsupportedScene(f"scene {name!r}: MuJoCo Warp cannot simulate it: {exc}") from None
