"""`metasim recon` on an RGB video of a known MuJoCo scene: structure from motion
(pycolmap) registers the frames; camera poses are compared with the truth after a
similarity alignment; the scene it writes validates."""

from __future__ import annotations

import json

import numpy as np
import pytest

from metasim.cli.main import main
from metasim.recon import ReconOptions, reconstruct
from metasim.recon.frame import apply
from metasim.recon.synthetic import MARKER_SIDE, TRUTH, orbit_poses, render_scan, write_video
from tests.recon.recon_truth import umeyama

# The module reconstructs a video scan once (~30 s here): the slow lane.
pytestmark = pytest.mark.slow

N_FRAMES = 40


@pytest.fixture(scope="module")
def video_recon(tmp_path_factory):
    work = tmp_path_factory.mktemp("video")
    rgb, _, poses, _ = render_scan(work, n=N_FRAMES, marker=True)
    video = work / "scan.mp4"
    write_video(video, rgb)
    out = work / "scene_out"
    opts = ReconOptions(quiet=True, max_frames=N_FRAMES, marker_size=MARKER_SIDE)
    report = reconstruct(video, out, opts)
    return out, report, poses


def _alignment(out, report, true_poses):
    """Similarity (s, R, t) from the SfM frame to the true world, by the camera centres,
    and the registered frames' SfM and true poses."""
    sfm = np.load(out / ".recon" / "sfm.npz")["poses"]
    idx = [int(n.split(".")[0]) for n in report["frames"]["names"]]
    ok = ~np.isnan(sfm[:, 0, 0])
    truth = true_poses[idx][ok]
    s, rot, t = umeyama(sfm[ok, :3, 3], truth[:, :3, 3])
    return s, rot, t, sfm[ok], truth


def test_frames_register_with_small_reprojection_error(video_recon):
    _, report, _ = video_recon
    poses = report["poses"]
    assert poses["source"].startswith("pycolmap")
    assert poses["registered"] >= 0.9 * N_FRAMES
    assert poses["mean_reprojection_error_px"] < 1.0


def test_camera_pose_error_after_alignment(video_recon):
    out, report, true_poses = video_recon
    s, rot, t, sfm, truth = _alignment(out, report, true_poses)
    centres = (s * sfm[:, :3, 3] @ rot.T) + t
    pos_err = np.linalg.norm(centres - truth[:, :3, 3], axis=1)
    rel = rot @ sfm[:, :3, :3]
    cos = (np.einsum("nij,nij->n", rel, truth[:, :3, :3]) - 1) / 2
    rot_err = np.degrees(np.arccos(np.clip(cos, -1, 1)))
    print(
        "recon video figures:",
        json.dumps(
            {
                "registered": f"{report['poses']['registered']}/{report['poses']['of']}",
                "reprojection_px": report["poses"]["mean_reprojection_error_px"],
                "position_error_mm_mean": float(pos_err.mean() * 1000),
                "position_error_mm_max": float(pos_err.max() * 1000),
                "rotation_error_deg_mean": float(rot_err.mean()),
                "psnr_db": report["quality"]["mean_psnr_db"],
                "marker_scale_error": report["scale"]["factor"] / s - 1.0,
            }
        ),
    )
    assert pos_err.mean() < 0.005 and rot_err.mean() < 0.5


def test_marker_scale_and_object_centroids(video_recon):
    """The ArUco marker gives the metric scale; objects land near the true ones."""
    out, report, true_poses = video_recon
    s, rot, t, _, _ = _alignment(out, report, true_poses)
    assert report["scale"]["source"] == "ArUco marker"
    scale_error = abs(report["scale"]["factor"] / s - 1.0)
    w2s = np.asarray(report["world_to_scene"])
    recon = np.array([o["pos"] for o in report["scene"]["objects"]])
    errors = {}
    for p in TRUTH:
        in_sfm = rot.T @ (np.asarray(p.pos) - t) / s
        true = apply(w2s, in_sfm[None])[0]
        errors[p.name] = float(np.min(np.linalg.norm(recon - true, axis=1)))
    print("recon video scale error", scale_error, "centroid errors (m)", errors)
    assert scale_error < 0.02
    assert len(recon) == len(TRUTH) and max(errors.values()) < 0.02


def test_video_scene_validates(video_recon):
    out, report, _ = video_recon
    assert "RGB-only" in report["geometry"]["path"]
    assert "skipped" in report["geometry"]["dense"]
    assert main(["scene", "validate", str(out / "scene.yaml")]) == 0


def test_frame_selection_prefers_sharp_frames():
    from metasim.recon.frames import select

    scores = [10, 50, 30, 11, 60, 1, 40, 45]
    assert select(scores, 4) == [1, 2, 4, 7]  # the sharpest of each quarter
    assert select([100, 100, 1, 100], 4) == [0, 1, 3]  # the blurred frame is dropped


def test_orbit_poses_look_at_the_table():
    poses = orbit_poses(8)
    forward = poses[:, :3, 2]
    to_centre = -poses[:, :3, 3] / np.linalg.norm(poses[:, :3, 3], axis=1, keepdims=True)
    assert np.all(np.einsum("ij,ij->i", forward, to_centre) > 0.95)
