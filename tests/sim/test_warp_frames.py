"""The warp rig's frames resolved on the device (`metasim.sim.warp.frames`): the same
bytes as the host path's sub-pixel mean, and only the frames copied to the host.

On Warp's CPU device; a CUDA device gives the same kernels. CUDA arrays refuse NumPy's
implicit conversion (`np.asarray`), which the CPU device allows: the rig and the OSC's
device side are checked with arrays that refuse it as CUDA's do (found on an H200,
bench/gpu.md).
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np
import pytest

pytest.importorskip("warp", reason="the warp extra (mujoco-warp, warp-lang) is not installed")
pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

import warp as wp

from metasim.sim.cameras import View
from metasim.sim.warp.cameras import downsample
from metasim.sim.warp.frames import FrameResolver


def _packed(rng: np.random.Generator, b: int, pixels: int) -> np.ndarray:
    """Random packed 0xAARRGGBB pixels with an opaque alpha (the top bit set) and byte
    values crowded near each other so that many block means end on .5 exactly."""
    rgb = rng.integers(0, 4, (b, pixels, 3)) + rng.integers(0, 252, (b, 1, 3))
    return ((0xFF << 24) | (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]).astype(np.uint32)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_device_mean_equals_the_host_mean_byte_for_byte(n: int) -> None:
    rng = np.random.default_rng(n)
    b, (w, h), pad = 3, (7, 5), 11  # the view starts `pad` pixels into the buffer
    hi = _packed(rng, b, pad + w * h * n * n + 5)
    frames = FrameResolver(b, n, "cpu")
    got = frames.rgb(wp.array(hi, dtype=wp.uint32, device="cpu"), pad, ("cam", w, h)).numpy()
    px = hi[:, pad : pad + w * h * n * n].view(np.uint8).reshape(b, h * n, w * n, 4)
    want = downsample(px, n)
    assert got.dtype == np.uint8 and got.shape == (b, h, w, 3)
    np.testing.assert_array_equal(got, want)
    if n % 2 == 0:  # ties were there to round, both ways
        means = px[..., :3].reshape(b, h, n, w, n, 3).astype(np.float64).mean(axis=(2, 4))
        frac = means - np.floor(means)
        assert (frac == 0.5).sum() > 10


@pytest.mark.parametrize("n", [1, 2, 3])
def test_device_depth_is_the_first_sub_pixel(n: int) -> None:
    rng = np.random.default_rng(10 + n)
    b, (w, h), pad = 2, (6, 4), 3
    depth = rng.random((b, pad + w * h * n * n)).astype(np.float32)
    got = FrameResolver(b, n, "cpu").depth(wp.array(depth, device="cpu"), pad, ("c", w, h))
    want = depth[:, pad : pad + w * h * n * n].reshape(b, h * n, w * n)[:, ::n, ::n]
    np.testing.assert_array_equal(got.numpy(), want)


class _DeviceOnly:
    """A device array as CUDA's behave: `.numpy()` copies, implicit conversion raises."""

    def __init__(self, values: Any) -> None:
        self._values = values

    def numpy(self) -> np.ndarray:
        return np.asarray(self._values.numpy() if hasattr(self._values, "numpy") else self._values)

    @property
    def __array_interface__(self) -> dict[str, Any]:  # what warp's CUDA arrays do
        raise TypeError("implicit NumPy conversion of a device array (as on cuda:0)")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._values, name)


class _Context:
    """A render context whose arrays refuse implicit conversion, as on CUDA."""

    def __init__(self, rc: Any) -> None:
        self.rgb_adr, self.depth_adr = _DeviceOnly(rc.rgb_adr), _DeviceOnly(rc.depth_adr)
        self.rgb_data, self.depth_data = rc.rgb_data, rc.depth_data  # kernel inputs


@pytest.mark.slow
def test_rig_copies_only_frames_and_never_converts_implicitly(lift_scene, monkeypatch) -> None:
    from metasim.sim import get_backend

    cams = [c.name for c in lift_scene.scene.cameras]
    views = [View(cams[0], 24, 16), View(cams[-1], 12, 12, depth=True)]
    handler = get_backend("mujoco").launch(lift_scene, 3)
    rig = handler.camera_rig(views, "warp")
    try:
        first = rig.render()
        copied: list[int] = []
        numpy = wp.array.numpy

        def counting(self: Any) -> np.ndarray:
            out = numpy(self)
            copied.append(out.nbytes)
            return out

        monkeypatch.setattr(wp.array, "numpy", counting)
        again = rig.render()
        monkeypatch.undo()
        for group, rc in zip(rig._groups, rig._contexts, strict=True):  # as on CUDA
            cuda = _Context(rc)
            got = rig._read(group, cuda)
            assert got and all(isinstance(v, np.ndarray) for v in got.values())
    finally:
        handler.close()
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    frames = sum(f.nbytes for f in again)
    n = rig.ss
    assert n >= 2  # the default anti-aliasing: the packed buffers are n² x the frames
    # the frames, plus the two small address tables per context
    assert sum(copied) <= frames + 1024, (sum(copied), frames)


def test_osc_device_side_reads_device_arrays_explicitly(lift_scene) -> None:
    """`on_device` of the numpy OSC takes MuJoCo Warp's model; its M_elemid must be
    copied with `.numpy()` (np.asarray raised TypeError on cuda:0)."""
    pytest.importorskip("libero", reason="the libero extra is not installed (an OSC robot)")
    import mujoco_warp as mjw

    from metasim.control.action_kinds.osc_pose import osc_for
    from metasim.libero.importer.scene import load_task
    from metasim.scene.compile import compile_scene

    compiled = compile_scene(load_task("libero:libero_goal/0").scene)
    m = compiled.model
    wm = mjw.put_model(m)
    wm.M_elemid = _DeviceOnly(wm.M_elemid)
    device = osc_for(compiled, 2).on_device("warp", m, wm, "cpu")
    assert device is not None
    assert isinstance(m, mujoco.MjModel)
