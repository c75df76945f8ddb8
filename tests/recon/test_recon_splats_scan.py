"""`metasim recon --splats` on the synthetic ground-truth scans that the other recon
tests use (40 frames of 320 x 240): the table alone (`TABLETOP`) and the room
(`ROOM`: floor and walls in view). On the held-out frames the splat background beats
the mesh background (and its own initialisation) in PSNR. 60 refinement steps here, to
bound the time; docs/recon.md gives the figures of the default 300."""

from __future__ import annotations

import json

import pytest

from metasim.recon import ReconOptions, reconstruct
from metasim.recon.synthetic import ROOM, TABLETOP, render_scan, write_rgbd_capture

torch = pytest.importorskip("torch")

# Each case reconstructs a scan and fits its splats (1 to 3 minutes here): the slow lane.
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("scene", [TABLETOP, ROOM], ids=["tabletop", "room"])
def test_splat_background_beats_the_mesh_on_held_out_views(tmp_path, scene):
    rgb, depth, poses, intr = render_scan(tmp_path, n=40, scene=scene)
    write_rgbd_capture(tmp_path / "capture", rgb, depth, poses, intr)
    opts = ReconOptions(quiet=True, splats=True, splat_iters=60)
    report = reconstruct(tmp_path / "capture", tmp_path / "out", opts)
    splats = report["splats"]
    scores = {k: round(v["mean_psnr_db"], 2) for k, v in splats["scores"].items()}
    ssim = {k: round(v["mean_ssim"], 3) for k, v in splats["scores"].items()}
    print("splat scan figures:", json.dumps({"psnr_db": scores, "ssim": ssim, **_timing(splats)}))
    assert splats["held_out"] and len(splats["views"]) == 5
    assert splats["train_l1"]["refined"] < splats["train_l1"]["initial"]
    assert scores["splat"] > scores["splat_initial"] and scores["splat"] > scores["mesh"], scores
    assert ssim["splat"] > ssim["mesh"], ssim


def _timing(splats: dict) -> dict:
    keys = ("gaussians", "steps", "fit_seconds")
    return {k: splats[k] for k in keys}
