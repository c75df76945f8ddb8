"""`metasim recon` on an RGB-D scan of a known MuJoCo scene: geometry against the truth,
the scene it writes (validates, compiles, the scripted expert lifts a scanned object)."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import open3d as o3d
import pytest

from metasim.cli.main import main
from metasim.recon import ReconOptions, reconstruct
from metasim.recon import inputs as inp
from metasim.recon.frame import apply
from metasim.recon.synthetic import TRUTH, render_scan, write_rgbd_capture
from tests.recon.recon_truth import centroid_errors, chamfer, true_visible_surfaces

# The module reconstructs an RGB-D scan once (~20 s here): the slow lane.
pytestmark = pytest.mark.slow

FIGURES: dict[str, object] = {}


@pytest.fixture(scope="module")
def scan(tmp_path_factory):
    work = tmp_path_factory.mktemp("rgbd")
    rgb, depth, poses, intr = render_scan(work, n=40)
    write_rgbd_capture(work / "capture", rgb, depth, poses, intr)
    return work / "capture", depth, poses, intr


@pytest.fixture(scope="module")
def recon(scan):
    capture = scan[0]
    out = capture.parent / "scene_out"
    t0 = time.perf_counter()
    report = reconstruct(capture, out, ReconOptions(quiet=True))
    FIGURES["first_run_s"] = round(time.perf_counter() - t0, 2)
    return out, report


@pytest.fixture(scope="module")
def truth(scan):
    """True surfaces seen by at least one scan frame: points (M, 3) and owners (M,)."""
    _, depth, poses, intr = scan
    return true_visible_surfaces(depth, poses, intr)


def _sample(mesh: o3d.geometry.TriangleMesh, n: int) -> np.ndarray:
    o3d.utility.random.seed(0)
    return np.asarray(mesh.sample_points_uniformly(n).points)


def test_objects_found_with_centroids_within_1cm(recon):
    out, report = recon
    assert len(report["scene"]["objects"]) == len(TRUTH)
    errors = centroid_errors(report)
    FIGURES["centroid_error_m"] = errors
    assert max(errors.values()) < 0.01, errors


def test_fused_geometry_chamfer_under_5mm(recon, truth):
    out, report = recon
    mesh = o3d.io.read_triangle_mesh(str(out / ".recon" / "fused.ply"))
    to_truth, to_ours = chamfer(_sample(mesh, 200_000), truth[0])
    FIGURES["chamfer_fused_m"] = (to_truth, to_ours)
    assert (to_truth + to_ours) / 2 < 0.005


def test_object_meshes_chamfer_under_5mm(recon, truth):
    out, report = recon
    points, owner = truth
    w2s = np.asarray(report["world_to_scene"])
    truth_scene = apply(w2s, points)
    centres = apply(w2s, np.array([p.pos for p in TRUTH]))
    figures = {}
    for ob in report["scene"]["objects"]:
        k = int(np.argmin(np.linalg.norm(centres - ob["pos"], axis=1)))
        mesh = o3d.io.read_triangle_mesh(str(out / f"{ob['name']}.obj"))
        c, s = math.cos(ob["yaw"]), math.sin(ob["yaw"])
        rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
        pts = _sample(mesh, 20_000) @ rot.T + ob["pos"]
        d = chamfer(pts, truth_scene[owner == k])
        figures[TRUTH[k].name] = d
        assert (d[0] + d[1]) / 2 < 0.005, (TRUTH[k].name, d)
    FIGURES["chamfer_objects_m"] = figures


def test_held_out_views_psnr(recon):
    out, report = recon
    quality = report["quality"]
    FIGURES["psnr_db"] = quality["mean_psnr_db"]
    assert quality["held_out"] and len(quality["views"]) >= 4
    assert quality["mean_psnr_db"] > 18.0
    assert (out / "report.png").is_file()


def test_scene_validates_and_the_expert_lifts_a_scanned_object(recon, tmp_path, capsys):
    out, report = recon
    scene = out / "scene.yaml"
    assert main(["scene", "validate", str(scene)]) == 0
    run = tmp_path / "run"
    code = main(
        [
            "eval",
            "--quiet",
            f"suite.tasks=[{scene}]",
            "suite.name=recon",
            "policy=scripted",
            "episodes=10",
            "num_envs=10",
            f"out={run}",
        ]
    )
    assert code == 0
    summary = json.loads((run / "summary.json").read_text())
    rate = next(iter(summary["tasks"].values()))["success_rate"]
    FIGURES["expert_success"] = rate
    assert rate >= 0.8


def test_rerun_skips_cached_stages(recon, scan):
    out, _ = recon
    fused = out / ".recon" / "fused.ply"
    before = fused.stat().st_mtime_ns
    t0 = time.perf_counter()
    reconstruct(scan[0], out, ReconOptions(quiet=True))
    FIGURES["rerun_s"] = round(time.perf_counter() - t0, 2)
    assert fused.stat().st_mtime_ns == before


def test_report_figures(recon):
    """Print what was measured (pytest -s shows it)."""
    _, report = recon
    FIGURES["registered"] = f"{report['poses']['registered']}/{report['poses']['of']}"
    print("recon rgbd figures:", json.dumps(FIGURES, default=str))


def test_npy_depth_without_poses_uses_sfm_with_metric_scale(tmp_path):
    """No poses.json: pycolmap finds the poses, the depth maps give the scale."""
    rgb, depth, poses, intr = render_scan(tmp_path, n=24)
    capture = tmp_path / "capture"
    write_rgbd_capture(capture, rgb, depth, None, intr, depth_format="npy")
    report = reconstruct(capture, tmp_path / "out", ReconOptions(quiet=True, holdout=0))
    assert report["poses"]["registered"] >= 20
    assert report["poses"]["depth_scale"] is not None
    errors = centroid_errors_sfm(report, poses, capture)
    print(
        "recon rgbd without poses: depth scale",
        report["poses"]["depth_scale"],
        "centroid errors (m)",
        errors,
        "registered",
        report["poses"]["registered"],
    )
    assert max(errors) < 0.01, errors


def centroid_errors_sfm(report, true_poses, capture):
    """Centroid errors when the scan frame is SfM's: align SfM to truth by the cameras."""
    from tests.recon.recon_truth import umeyama

    sfm = np.load(capture.parent / "out" / ".recon" / "sfm.npz")["poses"]
    ok = ~np.isnan(sfm[:, 0, 0])
    scale = report["poses"]["depth_scale"]
    names = report["frames"]["names"]
    idx = [int(n.split(".")[0]) for n in names]
    s, rot, t = umeyama(true_poses[idx][ok, :3, 3], sfm[ok, :3, 3] * scale)
    w2s = np.asarray(report["world_to_scene"])
    recon = np.array([o["pos"] for o in report["scene"]["objects"]])
    out = []
    for p in TRUTH:
        in_scan = s * rot @ np.asarray(p.pos) + t
        true = apply(w2s, in_scan[None])[0]
        out.append(float(np.min(np.linalg.norm(recon - true, axis=1))))
    return out


def test_inputs_read_both_depth_formats(tmp_path):
    d = np.array([[0.5, 1.25]], dtype=np.float32)
    np.save(tmp_path / "a.npy", d)
    from PIL import Image

    Image.fromarray((d * 1000).astype(np.uint16)).save(tmp_path / "a.png")
    assert np.allclose(inp.read_depth(tmp_path / "a.npy"), d)
    assert np.allclose(inp.read_depth(tmp_path / "a.png"), d)


def test_cli_prints_a_summary(recon, scan, capsys):
    out, _ = recon
    assert main(["recon", str(scan[0]), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    summary = json.loads(text[text.index("{") :])
    assert summary["geometry"].startswith("RGB-D") and summary["registered"] == "40/40"
    assert summary["objects"] == ["object0", "object1", "object2"]
