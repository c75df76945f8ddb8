"""A learned image policy on the GPU path (issue 44): a tiny conv net trained here, in
seconds, on the expert's demonstrations (`metasim collect`'s LeRobot dataset of
lift_cube: the front and wrist cameras under OpenGL), then run by `metasim eval` twice on
the same episode: native MuJoCo + OpenGL, and `backend=warp render=warp` (MuJoCo Warp's
physics and ray tracer; Warp's CPU device here, CUDA where there is one). Its actions
on the first control steps must agree within a stated tolerance: the images differ by
the renderer (~30 dB PSNR) and by float32 physics, and the policy is one that reads the
pixels (it regresses the expert's actions from them, with no state input).

Tolerance: 0.25 of the demonstrations' per-dimension action spread (the net's outputs are
in those standardised units), on each of the first CALLS steps of two episodes. The net
has no state input, so its training loss falling well below the actions' variance shows
it reads the pixels. It trains with the usual augmentation (shifts of 2 pixels, pixel
noise); without it the net was brittle to the renderer (0.35 measured, 2026-11-29). At
32x32 the warp rig's frames of lift_cube are 34.8 dB (front) and 30.8 dB (wrist) from
OpenGL's; the actions moved 0.13-0.20 here, more than the two episodes' different cube
positions moved them (0.06-0.11): what the renderer does to a policy is measured on
learned checkpoints with paired episodes (docs/learned_policy.md).
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

from metasim.evaluate.config import EvalConfig
from metasim.evaluate.runner import run_eval
from tests.collect.collect_helpers import SIZE, load
from tests.probes import Capped

LOG = "METASIM_TEST_LEARNED_WARP_LOG"
CALLS = 6  # control steps compared (one request each), then the policy stops the episode
TOLERANCE = 0.25  # in standardised action units (the demonstrations' per-dim std)
CAMERAS = ("front", "wrist")

pytestmark = [pytest.mark.learned, pytest.mark.slow]


def _net() -> Any:
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(6, 16, 5, stride=2),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 7),
    )


def _inputs(front: Any, wrist: Any) -> Any:
    """(B, 3, H, W) floats in [0, 1] for each camera -> the net's (B, 6, H, W) input."""
    return (torch.cat([front, wrist], dim=1) - 0.5) / 0.25


class LearnedNet(Capped):
    """The trained net as a `policy=python` object: HWC uint8 frames in, one action out
    (de-standardised), logged with the request's index."""

    limit = CALLS
    done = "policy done"

    def __init__(self, weights: str) -> None:
        super().__init__()
        saved = torch.load(weights)
        self.net = _net()
        self.net.load_state_dict(saved["net"])
        self.net.eval()
        self.mean, self.std = saved["mean"], saved["std"]

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        self.count()
        frames = [
            torch.as_tensor(np.asarray(obs[f"observation/{c}"])).permute(0, 3, 1, 2).float() / 255.0
            for c in CAMERAS
        ]
        with torch.no_grad():
            z = self.net(_inputs(*frames))
        with open(os.environ[LOG], "a") as f:
            f.write(json.dumps({"z": z.tolist()}) + "\n")
        return {"actions": (z * self.std + self.mean)[:, None, :].numpy()}


def _augment(x: Any) -> Any:
    """Random shifts of up to 2 pixels (edge-padded crops) and pixel noise: the
    augmentation image policies train with, so the net keys on the scene, not on exact
    pixel values."""
    b, _, h, w = x.shape
    pad = torch.nn.functional.pad(x, (2, 2, 2, 2), mode="replicate")
    dy, dx = torch.randint(0, 5, (2,))
    return pad[:, :, dy : dy + h, dx : dx + w] + 0.1 * torch.randn_like(x)


def _train(demos: Path, out: Path) -> tuple[float, float]:
    """The net fitted to the demonstrations (a few hundred Adam steps, seconds); the
    first and the last epoch's mean loss."""
    ds = load(demos).hf_dataset.with_format("torch")
    images = {c: torch.stack(list(ds[f"observation.images.{c}"])).float() for c in CAMERAS}
    actions = torch.stack(list(ds["action"])).float()
    if images["front"].max() > 1.5:  # stored as uint8 values
        images = {c: v / 255.0 for c, v in images.items()}
    mean, std = actions.mean(0), actions.std(0).clamp_min(1e-3)
    target = (actions - mean) / std
    x = _inputs(images["front"], images["wrist"])
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: on a shared CPU, two ran many times slower
    net = _net()
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    losses = []
    for _ in range(60):  # epochs
        perm = torch.randperm(len(x))
        epoch = []
        for i in range(0, len(x), 64):
            idx = perm[i : i + 64]
            loss = torch.nn.functional.mse_loss(net(_augment(x[idx])), target[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            epoch.append(float(loss.detach()))
        losses.append(float(np.mean(epoch)))
    torch.set_num_threads(threads)
    torch.save({"net": net.state_dict(), "mean": mean, "std": std}, out)
    return losses[0], losses[-1]


def _run(tmp: Path, weights: Path, name: str, where: dict[str, Any], mp: Any) -> list[Any]:
    log = tmp / f"{name}.jsonl"
    mp.setenv(LOG, str(log))
    image = {"render": [SIZE, SIZE], "size": [SIZE, SIZE]}
    policy = {
        "kind": "python",
        "target": "test_learned_warp:LearnedNet",
        "args": {"weights": str(weights)},
        "observation": {"images": {f"observation/{c}": {"camera": c, **image} for c in CAMERAS}},
        "execute": 1,
    }
    cfg = EvalConfig.model_validate(
        {"suite": {"name": "learned", "tasks": ["lift_cube"]}, "policy": policy,
         "episodes": 2, "num_envs": 2, "out": str(tmp / name), **where}
    )  # fmt: skip
    result = run_eval(cfg)
    assert all("policy done" in (r.error or "") for r in result.records), result.records
    return [np.asarray(json.loads(line)["z"]) for line in log.read_text().splitlines()]


def test_a_learned_image_policy_acts_alike_on_the_warp_path(
    demos: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = tmp_path / "net.pt"
    first, last = _train(demos, weights)
    assert last < 0.6 * first, (first, last)  # it learned from the pixels (no state input)
    gl = _run(tmp_path, weights, "opengl", {}, monkeypatch)
    rt = _run(tmp_path, weights, "warp", {"backend": "warp", "render": "warp"}, monkeypatch)
    assert len(gl) == len(rt) == CALLS
    diffs = [float(np.abs(a - b).max()) for a, b in zip(gl, rt, strict=True)]
    apart = [float(np.abs(a[0] - a[1]).max()) for a in gl]
    print(f"loss {first:.3f} -> {last:.3f}; |warp - opengl| per step {np.round(diffs, 3)}")
    print(f"the two episodes apart under opengl, per step {np.round(apart, 3)}")
    assert max(diffs) <= TOLERANCE, diffs
