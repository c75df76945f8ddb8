"""Image parity of `render=warp` against MuJoCo's OpenGL on benchmark cameras (a floor that
catches a regression of the tuned settings, e.g. MuJoCo Warp's own shading order, which
measured 13.8 dB on libero_90/5's agentview against 30.1 dB with OpenGL's order).

The sample: one LIBERO task (both cameras, 256x256) and one Meta-World task (corner,
128x128). The sweep lane (`-m sweep`): the 10 held-out libero_10 tasks at 256x256, whose mean is the
figure docs/rendering.md reports (bench/render_parity.py prints the whole table).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

from metasim.bench.image_parity import task_parity
from metasim.errors import MetasimInputError
from metasim.scene.render_schema import RaytraceSpec
from metasim.scene.sources import NoSuchTask, all_suites

pytestmark = pytest.mark.slow
LIBERO_CAMS = ["agentview", "robot0_eye_in_hand"]


def _parity(ref: str, cams: list[str], size: int) -> dict[str, float]:
    try:
        res = task_parity(ref, cams, (size, size), RaytraceSpec(), states=2, seed=1)
    except (NoSuchTask, MetasimInputError) as exc:
        pytest.skip(f"{ref} is not installed here: {exc}")
    return {c: r["psnr"] for c, r in res.items()}


def test_libero_cameras_close_to_opengl() -> None:
    # measured 34.2 / 36.7 dB (256x256, 2x2 samples; MuJoCo Warp's own shading: 34.2 / 19.9)
    psnr = _parity("libero:libero_10/4", LIBERO_CAMS, 256)
    assert min(psnr.values()) > 30.0, psnr


@pytest.mark.reference  # Meta-World loads from its reference venv
def test_metaworld_corner_close_to_opengl() -> None:
    # measured 29.3 dB (128x128, 2x2 samples) before reflections, mipmaps and the
    # shadow-casting light's own pass; MT10 at 480x480 then: corner 31.2, corner2/3 and
    # topview 32.7-33.6, gripperPOV 27.5; with the sites drawn, held-out tasks: corner
    # 33.1, gripperPOV 38.6 (docs/rendering.md)
    psnr = _parity("metaworld:MT10/push-v3", ["corner"], 128)
    assert psnr["corner"] > 26.0, psnr


@pytest.mark.sweep  # 10 LIBERO tasks at 256x256
def test_libero_10_mean_psnr_over_30_db() -> None:
    tasks = all_suites().get("libero_10") or pytest.skip("LIBERO is not installed here")
    rows = [_parity(ref, LIBERO_CAMS, 256) for ref in tasks]
    for cam in LIBERO_CAMS:
        assert np.mean([r[cam] for r in rows]) > 30.0, (cam, rows)
