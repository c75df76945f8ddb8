"""`metasim eval render=warp` against `render=opengl` with an image-consuming policy.

The probe is a `policy=python` object that reads both camera images of every request
(checks them: uint8, the preset's size, not blank), logs the robot state it was sent, and
answers with actions that depend on the step only, not on the images' exact values. The
same LIBERO and Meta-World episodes run under both renderers, so the logged states (the
physics) must be identical and only the image statistics may differ; the probe stops each
episode after a few requests (an error the run records) to keep the runs short. The run
manifest names the renderer and the warp run's summary says that the image inputs
differ from the benchmark's.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

from metasim.evaluate.config import EvalConfig
from metasim.evaluate.runner import run_eval
from tests.probes import Capped

LOG = "METASIM_TEST_RENDER_LOG"
CALLS = 4  # requests per episode before the probe stops it

pytestmark = pytest.mark.slow


class ImageProbe(Capped):
    """Consumes the images (shape, dtype, brightness), logs the state, acts by the step."""

    limit = CALLS

    def __init__(self, dim: int, images: list[str]) -> None:
        super().__init__()
        self.dim, self.images = dim, images

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        self.count()
        means = []
        for key in self.images:
            img = np.asarray(obs[key])
            assert img.dtype == np.uint8 and img.shape[1:] == (64, 64, 3), (key, img.shape)
            assert img.std() > 1.0, f"{key} is blank"
            means.append(float(img.mean()))
        state = np.asarray(obs["observation/state"], dtype=np.float64)
        with open(os.environ[LOG], "a") as f:
            f.write(json.dumps({"state": state.tolist(), "image_means": means}) + "\n")
        b = state.shape[0]
        t = np.arange(4)[None, :, None] + 4 * self.calls
        actions = 0.3 * np.sin(0.7 * t + np.arange(self.dim)[None, None, :])
        return {"actions": np.broadcast_to(actions, (b, 4, self.dim)).copy()}


def _image(camera: str) -> dict[str, Any]:
    return {"camera": camera, "render": [64, 64], "size": [64, 64]}


POLICIES = {
    "libero:libero_goal/3": {
        "observation": {
            "images": {
                "observation/image": _image("agentview"),
                "observation/wrist_image": _image("robot0_eye_in_hand"),
            },
            "state": {"observation/state": ["ee_pos", "hand_axis_angle", "gripper_qpos"]},
        },
        "actions": {"space": "osc_pose", "gripper": "pm1_open_neg"},
        "dim": 7,
    },
    "metaworld:MT10/reach-v3": {
        "observation": {
            "images": {
                "observation/image": _image("corner2"),
                "observation/wrist_image": _image("topview"),
            },
            "state": {"observation/state": ["metaworld_agent_pos"]},
        },
        "actions": {"space": "mocap_delta", "gripper": "pm1_open_neg"},
        "dim": 4,
    },
}


def _run(tmp: Path, ref: str, render: str, monkeypatch: Any) -> tuple[Any, list[Any], float]:
    log = tmp / f"{render}.jsonl"
    monkeypatch.setenv(LOG, str(log))
    spec = POLICIES[ref]
    policy = {
        "kind": "python",
        "target": "test_render_eval:ImageProbe",
        "args": {"dim": spec["dim"], "images": list(spec["observation"]["images"])},
        "observation": spec["observation"],
        "actions": spec["actions"],
        "execute": 4,
    }
    cfg = EvalConfig.model_validate(
        {"suite": {"name": "probe", "tasks": [ref]}, "policy": policy, "episodes": 2,
         "num_envs": 2, "render": render, "out": str(tmp / render)}
    )  # fmt: skip
    t0 = time.perf_counter()
    result = run_eval(cfg)
    wall = time.perf_counter() - t0
    rows = pq.read_table(tmp / render / "episodes.parquet").to_pylist()
    assert all("probe done" in (r["error"] or "") for r in rows), rows
    return result, [json.loads(line) for line in log.read_text().splitlines()], wall


# Meta-World's model files come from its reference venv (metasim/metaworld/importer/paths.py)
NEEDS_REFERENCE = {"metaworld:MT10/reach-v3"}


@pytest.mark.parametrize(
    "ref",
    [
        pytest.param(r, marks=pytest.mark.reference) if r in NEEDS_REFERENCE else r
        for r in sorted(POLICIES)
    ],
)
def test_same_episodes_same_physics_either_renderer(tmp_path, monkeypatch, ref) -> None:
    runs = {r: _run(tmp_path, ref, r, monkeypatch) for r in ("opengl", "warp")}
    (gl, gl_log, gl_wall), (rt, rt_log, rt_wall) = runs["opengl"], runs["warp"]
    assert len(gl_log) == len(rt_log) == CALLS  # one batched request per step of 2 envs
    for a, b in zip(gl_log, rt_log, strict=True):
        np.testing.assert_array_equal(a["state"], b["state"])  # the same physics, bit for bit
        np.testing.assert_allclose(a["image_means"], b["image_means"], atol=40)
    assert [(r.episode, r.steps) for r in gl.records] == [(r.episode, r.steps) for r in rt.records]
    manifests = {r: json.loads((tmp_path / r / "manifest.json").read_text()) for r in runs}
    assert manifests["warp"]["renderer"].startswith("warp: MuJoCo Warp's ray tracer")
    assert manifests["opengl"]["renderer"].startswith("opengl: MuJoCo offscreen OpenGL")
    summary = json.loads((tmp_path / "warp" / "summary.json").read_text())
    prefix = ref.split(":")[0] + ":"
    note = summary["image_inputs"][prefix]
    assert "image inputs differ from the benchmark's" in note and "PSNR" in note
    assert "image_inputs" not in json.loads((tmp_path / "opengl" / "summary.json").read_text())
    print(f"{ref}: wall opengl {gl_wall:.1f} s, warp {rt_wall:.1f} s")
