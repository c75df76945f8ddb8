"""Bad inputs to `metasim recon`: exit 2 with one paragraph naming the file and what was
expected, never a traceback."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from metasim.cli.main import main
from metasim.recon.camera import Intrinsics
from metasim.recon.synthetic import write_rgbd_capture


def _capture(folder, n=3, w=32, h=24, poses=True):
    rgb = np.random.default_rng(0).integers(0, 255, (n, h, w, 3), dtype=np.uint8)
    depth = np.full((n, h, w), 0.8, dtype=np.float32)
    pose = np.tile(np.eye(4), (n, 1, 1)) if poses else None
    write_rgbd_capture(folder, rgb, depth, pose, Intrinsics.from_fovy(50, w, h))
    return folder


def _recon(capsys, tmp_path, source):
    code = main(["recon", str(source), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    return err


def test_missing_input(tmp_path, capsys):
    err = _recon(capsys, tmp_path, tmp_path / "nowhere")
    assert "nowhere" in err and "no such file" in err


def test_empty_folder(tmp_path, capsys):
    (tmp_path / "scan").mkdir()
    err = _recon(capsys, tmp_path, tmp_path / "scan")
    assert "scan" in err and "empty" in err and "rgb/" in err


def test_unreadable_video(tmp_path, capsys):
    bad = tmp_path / "scan.mp4"
    bad.write_bytes(b"this is not a video at all" * 10)
    err = _recon(capsys, tmp_path, bad)
    assert "scan.mp4" in err and "cannot be decoded as a video" in err


def test_not_a_video_file(tmp_path, capsys):
    bad = tmp_path / "scan.txt"
    bad.write_text("hello")
    err = _recon(capsys, tmp_path, bad)
    assert "scan.txt" in err and "expected a video" in err


def test_missing_intrinsics(tmp_path, capsys):
    cap = _capture(tmp_path / "cap")
    (cap / "intrinsics.json").unlink()
    err = _recon(capsys, tmp_path, cap)
    assert "intrinsics.json" in err and "fx" in err and "missing" in err


def test_bad_intrinsics(tmp_path, capsys):
    cap = _capture(tmp_path / "cap")
    (cap / "intrinsics.json").write_text(json.dumps({"fx": 100, "fy": 100}))
    err = _recon(capsys, tmp_path, cap)
    assert "intrinsics.json" in err and "cx" in err


def test_depth_rgb_size_mismatch(tmp_path, capsys):
    cap = _capture(tmp_path / "cap")
    Image.fromarray(np.full((12, 16), 800, dtype=np.uint16)).save(cap / "depth" / "0001.png")
    err = _recon(capsys, tmp_path, cap)
    assert "0001.png" in err and "16x12" in err and "32x24" in err and "same size" in err


def test_depth_count_mismatch(tmp_path, capsys):
    cap = _capture(tmp_path / "cap")
    (cap / "depth" / "0002.png").unlink()
    err = _recon(capsys, tmp_path, cap)
    assert "depth" in err and "3 RGB frames, 2 depth maps" in err


def test_depth_not_16_bit(tmp_path, capsys):
    cap = _capture(tmp_path / "cap")
    Image.fromarray(np.zeros((24, 32), dtype=np.uint8)).save(cap / "depth" / "0000.png")
    err = _recon(capsys, tmp_path, cap)
    assert "0000.png" in err and "16-bit" in err


def test_too_few_registered_frames(tmp_path, capsys):
    """Featureless frames: structure from motion cannot register them."""
    folder = tmp_path / "images"
    folder.mkdir()
    for i in range(4):
        Image.fromarray(np.full((48, 64, 3), 120 + i, dtype=np.uint8)).save(folder / f"{i}.png")
    err = _recon(capsys, tmp_path, folder)
    assert "images" in err and "registered 0 of 4 frames" in err and "at least" in err


@pytest.mark.parametrize("content", ["[1, 2]", "{not json"])
def test_bad_poses(tmp_path, capsys, content):
    cap = _capture(tmp_path / "cap")
    (cap / "poses.json").write_text(content)
    err = _recon(capsys, tmp_path, cap)
    assert "poses.json" in err
