"""`metasim recon --splats`: the background as 3D Gaussians refined on the CPU, on a tiny
synthetic RGB-D scan (16 frames of 96 x 72, 20 refinement steps; the bounded version CI
runs). Refinement lowers the photometric loss on the training views, the refined splats
beat their initialisation on the held-out views (the mesh background's figure is
reported next to them), the .ply round-trips, the stage is cached, and bad splat flags
are refused with exit 2."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import numpy as np
import pytest

from metasim.cli.main import main
from metasim.recon import ReconOptions, reconstruct
from metasim.recon.synthetic import render_scan, write_rgbd_capture
from metasim.scene import load_scene
from metasim.scene.background import load_background
from metasim.splats import read_splat_ply

torch = pytest.importorskip("torch")

OPTS = ReconOptions(
    quiet=True, holdout=4, voxel=0.008, splats=True, splat_iters=20, splat_count=3000
)
FLAGS = ["--holdout", "4", "--voxel", "0.008", "--splats", "--splat-iters", "20"]
FLAGS += ["--splat-count", "3000"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(capture folder, output folder, report, seconds) of the tiny scan, reconstructed
    with splats (one torch thread: the machine is shared)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    work = tmp_path_factory.mktemp("splats")
    rgb, depth, poses, intr = render_scan(work, n=16, width=96, height=72)
    write_rgbd_capture(work / "capture", rgb, depth, poses, intr)
    t0 = time.perf_counter()
    report = reconstruct(work / "capture", work / "out", OPTS)
    yield work / "capture", work / "out", report, time.perf_counter() - t0
    torch.set_num_threads(before)


@pytest.mark.slow
def test_refinement_lowers_the_training_loss(tiny):
    splats = tiny[2]["splats"]
    assert splats["steps"] == 20 and splats["training_views"] == 12
    loss = splats["train_l1"]
    assert loss["refined"] < 0.9 * loss["initial"], loss


@pytest.mark.slow
def test_held_out_psnr_of_the_splats_beats_their_initialisation(tiny):
    splats = tiny[2]["splats"]
    assert splats["held_out"] and len(splats["views"]) == 4
    scores = splats["scores"]
    assert set(scores) == {"mesh", "splat_initial", "splat"}
    for name, s in scores.items():
        assert len(s["psnr_db"]) == len(s["ssim"]) == 4, name
        assert 5.0 < s["mean_psnr_db"] < 60.0 and 0.0 < s["mean_ssim"] <= 1.0, (name, s)
    assert scores["splat"]["mean_psnr_db"] > scores["splat_initial"]["mean_psnr_db"] + 0.3
    assert scores["splat"]["mean_ssim"] > scores["splat_initial"]["mean_ssim"]
    # The mesh background's figure is the scene's own quality figure, on the same views.
    quality = tiny[2]["quality"]
    assert splats["views"] == quality["views"]
    assert scores["mesh"]["mean_psnr_db"] == pytest.approx(quality["mean_psnr_db"], abs=1e-6)
    assert "not computed" in splats["lpips"]
    print("tiny splat scores:", {k: round(v["mean_psnr_db"], 2) for k, v in scores.items()})


@pytest.mark.slow
def test_the_ply_round_trips_and_renders_the_reported_figure(tiny):
    """The written file is the refined background: read back, it renders the held-out
    views to the PSNR the report gives."""
    from metasim.recon import splat_fit as sf
    from metasim.recon import splat_stage as ss
    from metasim.recon.frame import pose_to_scene
    from metasim.recon.quality import psnr
    from metasim.splats import read_splat_ply, write_splat_ply

    capture, out, report, _ = tiny
    splats = read_splat_ply(out / "background_splats.ply")
    assert len(splats) == report["splats"]["gaussians"] and splats.sh_rest == 0
    write_splat_ply(out / "again.ply", splats)
    again = read_splat_ply(out / "again.ply")
    np.testing.assert_allclose(again.position, splats.position)
    np.testing.assert_allclose(again.rgba, splats.rgba, atol=1e-6)
    np.testing.assert_allclose(again.scale, splats.scale, rtol=1e-6)
    # Render the held-out views from the file.
    from metasim.recon import inputs as inp
    from metasim.recon.camera import Intrinsics

    intr = Intrinsics(**json.loads((capture / "intrinsics.json").read_text()))
    frames = json.loads((capture / "poses.json").read_text())["frames"]
    by_name = {f["file"]: np.asarray(f["camera_to_world"]) for f in frames}
    names = report["splats"]["views"]
    w2s = np.asarray(report["world_to_scene"])
    poses = np.stack([pose_to_scene(w2s, by_name[n]) for n in names])
    images = [inp.read_rgb(capture / "rgb" / n) for n in names]
    renders = ss._render_all(
        sf.from_splats(splats), ss._views(out / "scene.yaml", images, poses, intr)
    )
    got = float(np.mean([psnr(a, b) for a, b in zip(images, renders, strict=True)]))
    assert got == pytest.approx(report["splats"]["scores"]["splat"]["mean_psnr_db"], abs=0.05)


@pytest.mark.slow
def test_cli_prints_the_held_out_figures(tiny, capsys):
    capture, out, _, _ = tiny
    assert main(["recon", str(capture), "--out", str(out), *FLAGS]) == 0
    text = capsys.readouterr().out
    summary = json.loads(text[text.index("{") :])
    assert summary["splats"] == "background_splats.ply"
    assert set(summary["held_out_psnr_db"]) == {"mesh", "splat_initial", "splat"}


@pytest.mark.slow
def test_the_stage_is_cached(tiny):
    capture, out, report, first_s = tiny
    ply = out / "background_splats.ply"
    fused = out / ".recon" / "fused.ply"
    stamps = ply.stat().st_mtime_ns, fused.stat().st_mtime_ns
    t0 = time.perf_counter()
    again = reconstruct(capture, out, OPTS)
    rerun_s = time.perf_counter() - t0
    assert (ply.stat().st_mtime_ns, fused.stat().st_mtime_ns) == stamps
    assert again["splats"] == report["splats"] and rerun_s < first_s / 3
    # Another step count refits the splats only.
    more = reconstruct(capture, out, replace(OPTS, splat_iters=21))
    assert more["splats"]["steps"] == 21 and ply.stat().st_mtime_ns != stamps[0]
    assert fused.stat().st_mtime_ns == stamps[1]
    # Without --splats the report drops the section and the scene its background; with
    # it again, both come back.
    assert "splats" not in reconstruct(capture, out, replace(OPTS, splats=False))
    assert "splats" not in json.loads((out / "report.json").read_text())
    assert load_scene(out / "scene.yaml").background is None
    assert reconstruct(capture, out, replace(OPTS, splat_iters=21))["splats"] == more["splats"]
    assert load_scene(out / "scene.yaml").background is not None


@pytest.mark.slow
def test_the_scene_uses_its_splat_background(tiny):
    """scene.yaml names the fitted splats with the scan mesh as their OpenGL fallback, and
    the scene loads with them (the splat file read and placed in the scene frame)."""
    _, out, _, _ = tiny
    scene = load_scene(out / "scene.yaml")
    assert scene.background is not None
    assert scene.background.splats == "background_splats.ply"
    assert scene.background.fallback == "background"
    splats = load_background(scene.background, out)
    assert len(splats) == len(read_splat_ply(out / "background_splats.ply")) > 0


def _exit2(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as info:
        raise SystemExit(main(argv))
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert err.startswith("error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize("value", ["0", "-5", "2.5", "many", "nan", "100001"])
def test_bad_splat_iters_exit_2(capsys, tmp_path, value):
    err = _exit2(
        capsys, ["recon", "IN", "--out", str(tmp_path / "o"), "--splats", "--splat-iters", value]
    )
    assert "--splat-iters" in err and "expected a whole number" in err


@pytest.mark.parametrize("flag", ["--splat-iters", "--splat-count", "--splat-seconds"])
def test_splat_flags_without_splats_exit_2(capsys, tmp_path, flag):
    err = _exit2(capsys, ["recon", "IN", "--out", str(tmp_path / "o"), flag, "5"])
    assert f"{flag}: only with --splats" in err
