"""Images that stay on the device (issue 45, item 1): `metasim eval backend=warp
render=warp` with a policy that declares `device_images = True`.

The policy is a small conv net with fixed (seeded) weights, batched: its images arrive as
torch tensors on the device the physics and the warp rig share, the preset's conventions
(origin at the bottom, rotated 180°, CHW float) applied there (`ImageSpec.finish_torch`),
normalised there, one forward for every env per request. On Warp's CPU device (the
stand-in for CUDA, as the strict-array conftest's): every copy to the host made while the
episodes run is logged (`wp.array.numpy`, `torch.Tensor.numpy/cpu`), and none may be a
frame; the same policy reading host images (the path of every other run) copies the
frames, so the monitor sees them there. Both runs give the same episode records and the
policy the same inputs and actions, bit for bit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")
pytest.importorskip("torch", reason="the torch extra is not installed")

import torch
import warp as wp

from metasim.evaluate.config import EvalConfig
from metasim.evaluate.runner import run_eval
from tests.probes import Capped

LOG = "METASIM_TEST_DEVICE_LOG"
CALLS = 5  # requests per episode before the policy stops it (a recorded error)
SIZE = 32
KEYS = ("observation/image", "observation/wrist_image")

pytestmark = pytest.mark.slow


class DeviceNet(Capped):
    """A fixed-weight image policy: conv net over both cameras, one batched forward."""

    limit = CALLS
    done = "policy done"
    device_images = True

    def __init__(self, dim: int) -> None:
        gen = torch.Generator().manual_seed(0)
        self.w1 = torch.randn(8, 6, 5, 5, generator=gen) * 0.1  # both cameras' channels
        self.w2 = torch.randn(8, dim * 4, generator=gen) * 0.3
        super().__init__()
        self.dim = dim

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        self.count()
        images = [torch.as_tensor(obs[k]) for k in KEYS]  # (B, 3, H, W) float in [0, 1]
        device = images[0].device
        x = (torch.cat(images, dim=1) - 0.5) / 0.25  # normalised on the device
        h = torch.relu(torch.nn.functional.conv2d(x, self.w1.to(device), stride=4))
        actions = torch.tanh(h.mean(dim=(2, 3)) @ self.w2.to(device)).reshape(-1, 4, self.dim)
        line = {  # what the runs compare (sums and actions, not frames)
            "device": str(device),
            "types": [type(obs[k]).__name__ for k in KEYS],
            "sums": [float(i.double().sum()) for i in images],
            "actions": (0.5 * actions).tolist(),
        }
        with open(os.environ[LOG], "a") as f:
            f.write(json.dumps(line) + "\n")
        return {"actions": 0.5 * actions}


class HostNet(DeviceNet):
    """The same policy on the host path (images as NumPy arrays)."""

    device_images = False


class CopyMonitor:
    """Logs the shape of every array copied to the host while it is installed."""

    def __init__(self, monkeypatch: Any) -> None:
        self.shapes: list[tuple[int, ...]] = []
        warp_numpy, t_numpy, t_cpu = wp.array.numpy, torch.Tensor.numpy, torch.Tensor.cpu

        def log(shape: Any) -> None:
            self.shapes.append(tuple(int(s) for s in shape))

        def warp_copy(a: Any, *args: Any, **kw: Any) -> Any:
            log(a.shape)
            return warp_numpy(a, *args, **kw)

        def torch_numpy(t: Any, *args: Any, **kw: Any) -> Any:
            log(t.shape)
            return t_numpy(t, *args, **kw)

        def torch_cpu(t: Any, *args: Any, **kw: Any) -> Any:
            log(t.shape)
            return t_cpu(t, *args, **kw)

        monkeypatch.setattr(wp.array, "numpy", warp_copy)
        monkeypatch.setattr(torch.Tensor, "numpy", torch_numpy)
        monkeypatch.setattr(torch.Tensor, "cpu", torch_cpu)

    def frames(self) -> list[tuple[int, ...]]:
        """The copies that may hold a frame: one env's frame's values (SIZE² x 3) or more,
        or a (SIZE, SIZE) plane in their shape."""
        return [s for s in self.shapes if int(np.prod(s)) >= SIZE * SIZE * 3 or _plane(s)]


def _plane(shape: tuple[int, ...]) -> bool:
    return any(shape[i : i + 2] == (SIZE, SIZE) for i in range(len(shape)))


def _image(camera: str) -> dict[str, Any]:
    # LIBERO's conventions as its presets give them: bottom-row-first frames, rotated
    # 180°, CHW floats; at the render size (a resize on the device is not byte-equal)
    return {
        "camera": camera,
        "render": [SIZE, SIZE],
        "size": [SIZE, SIZE],
        "origin": "bottom",
        "rotate": 180,
        "layout": "chw_float",
    }


def _run(tmp: Path, name: str, target: str, monkeypatch: Any) -> tuple[Any, list[Any], Any]:
    log = tmp / f"{name}.jsonl"
    monkeypatch.setenv(LOG, str(log))
    policy = {
        "kind": "python",
        "target": f"test_device_images:{target}",
        "args": {"dim": 7},
        "observation": {"images": {KEYS[0]: _image("front"), KEYS[1]: _image("wrist")}},
        "execute": 4,
    }
    cfg = EvalConfig.model_validate(
        {"suite": {"name": "device", "tasks": ["lift_cube"]}, "policy": policy, "episodes": 2,
         "num_envs": 2, "backend": "warp", "render": "warp", "render_spp": 1,
         "out": str(tmp / name)}
    )  # fmt: skip
    with monkeypatch.context() as mp:
        monitor = CopyMonitor(mp)
        result = run_eval(cfg)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return result, lines, monitor


def test_frames_stay_on_the_device_and_records_match(tmp_path, monkeypatch) -> None:
    dev, dev_log, dev_copies = _run(tmp_path, "device", "DeviceNet", monkeypatch)
    host, host_log, host_copies = _run(tmp_path, "host", "HostNet", monkeypatch)
    assert len(dev_log) == len(host_log) == CALLS
    assert all(line["types"] == ["Tensor", "Tensor"] for line in dev_log)
    assert all(line["device"] == "cpu" for line in dev_log)  # the warp device (Warp's CPU)
    assert all(line["types"] == ["ndarray", "ndarray"] for line in host_log)
    for k, (a, b) in enumerate(zip(dev_log, host_log, strict=True)):  # the same, bit for bit
        assert a["sums"] == b["sums"], k
        assert a["actions"] == b["actions"], (
            k,
            np.abs(np.subtract(a["actions"], b["actions"])).max(),
        )
    assert dev_copies.frames() == [], dev_copies.frames()
    # the control: the host path copies the frames, and the monitor sees them
    assert (2, SIZE, SIZE, 3) in host_copies.frames()
    key = [(r.episode, r.steps, r.success, r.progress, r.error) for r in dev.records]
    assert key == [(r.episode, r.steps, r.success, r.progress, r.error) for r in host.records]
    assert all("policy done" in (r.error or "") for r in dev.records)
