"""Inputs to `metasim recon` that used to end in a traceback, an out-of-memory or a vague
"too little geometry": each is refused with exit 2 in one line naming the file and field."""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from metasim.recon.camera import Intrinsics
from metasim.recon.synthetic import write_rgbd_capture
from tests.cli_refusal import refused


def _capture(folder, n=3, w=32, h=24, depth_format="png"):
    rgb = np.random.default_rng(0).integers(0, 255, (n, h, w, 3), dtype=np.uint8)
    depth = np.full((n, h, w), 0.8, dtype=np.float32)
    poses = np.tile(np.eye(4), (n, 1, 1))
    write_rgbd_capture(folder, rgb, depth, poses, Intrinsics.from_fovy(50, w, h), depth_format)
    return folder


def _recon(capsys, tmp_path, source, out=None):
    out = out or tmp_path / "out"
    return refused(capsys, ["recon", str(source), "--out", str(out), "--quiet"])


def _png_claiming(path, width, height):
    """A valid 1x1 PNG whose IHDR then claims width x height (CRC fixed)."""
    Image.new("RGB", (1, 1)).save(path)
    data = bytearray(path.read_bytes())
    ihdr = struct.pack(">II", width, height) + bytes(data[24:29])
    data[16:29] = ihdr
    data[29:33] = struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    path.write_bytes(bytes(data))


def test_png_header_claiming_60000_squared(tmp_path, capsys):
    cap = _capture(tmp_path / "cap")
    _png_claiming(cap / "rgb" / "0001.png", 60000, 60000)
    err = _recon(capsys, tmp_path, cap)
    assert "0001.png" in err and "60000×60000" in err and "METASIM_MAX_PIXELS" in err


def test_npy_depth_with_a_huge_header(tmp_path, capsys):
    cap = _capture(tmp_path / "cap", depth_format="npy")
    with open(cap / "depth" / "0000.npy", "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": (200_000, 200_000)}
        )
    err = _recon(capsys, tmp_path, cap)
    assert "0000.npy" in err and "over the limit" in err


def test_npy_depth_of_strings(tmp_path, capsys):
    cap = _capture(tmp_path / "cap", depth_format="npy")
    np.save(cap / "depth" / "0000.npy", np.full((24, 32), "x"))
    err = _recon(capsys, tmp_path, cap)
    assert "0000.npy" in err and "numeric" in err


def test_all_zero_depth(tmp_path, capsys):
    cap = _capture(tmp_path / "cap")
    Image.fromarray(np.zeros((24, 32), dtype=np.uint16)).save(cap / "depth" / "0000.png")
    err = _recon(capsys, tmp_path, cap)
    assert "0000.png" in err and "no valid depth" in err


def _poses(cap, mats):
    frames = [{"file": f"{i:04d}.png", "camera_to_world": m} for i, m in enumerate(mats)]
    (cap / "poses.json").write_text(json.dumps({"frames": frames}))


NAN = [[float("nan")] * 4] * 4
EYE = np.eye(4).tolist()
SCALED = (np.diag([2.0, 2.0, 2.0, 1.0])).tolist()


@pytest.mark.parametrize(
    ("mats", "expected"),
    [
        ([NAN, NAN, NAN], "3 pose(s) unusable; the first, frame 0 (0000.png), has NaN"),
        ([np.zeros((4, 4)).tolist()] * 3, "frame 0 (0000.png), is not rigid"),
        ([EYE, SCALED, EYE], "1 pose(s) unusable; the first, frame 1 (0001.png), is not rigid"),
        ([EYE, EYE, NAN], "frame 2 (0002.png), has NaN"),  # was fused silently
    ],
)
def test_unusable_poses_are_named(tmp_path, capsys, mats, expected):
    cap = _capture(tmp_path / "cap")
    _poses(cap, mats)
    err = _recon(capsys, tmp_path, cap)
    assert "poses.json" in err and expected in err


@pytest.mark.parametrize("field", ["fx", "fy", "cx"])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_intrinsics(tmp_path, capsys, field, value):
    cap = _capture(tmp_path / "cap")
    intr = json.loads((cap / "intrinsics.json").read_text())
    intr[field] = value
    (cap / "intrinsics.json").write_text(json.dumps(intr))  # Python writes NaN / Infinity
    err = _recon(capsys, tmp_path, cap)
    assert "intrinsics.json" in err and f"{field}: expected finite" in err


def test_one_frame_scan(tmp_path, capsys):
    cap = _capture(tmp_path / "cap", n=1)
    err = _recon(capsys, tmp_path, cap)
    assert "rgb" in err and "1 frame (0000.png)" in err and "at least 2" in err


def test_deep_poses_json(tmp_path, capsys):
    cap = _capture(tmp_path / "cap")
    (cap / "poses.json").write_text("[" * 100_000 + "]" * 100_000)
    err = _recon(capsys, tmp_path, cap)
    assert "poses.json" in err and "nested more than" in err


@pytest.mark.parametrize("where", ["file", "under_file"])
def test_out_that_is_a_file_or_under_one(tmp_path, capsys, where):
    cap = _capture(tmp_path / "cap")
    blocker = tmp_path / "taken"
    blocker.write_text("x")
    out = blocker if where == "file" else blocker / "scene"
    err = _recon(capsys, tmp_path, cap, out)
    assert "--out" in err and "taken is a file" in err


def test_video_frames_over_the_pixel_limit(tmp_path, capsys, monkeypatch):
    from metasim.recon.synthetic import write_video

    video = tmp_path / "scan.mp4"
    write_video(video, np.zeros((3, 48, 64, 3), dtype=np.uint8))
    monkeypatch.setenv("METASIM_MAX_PIXELS", "1000")
    err = _recon(capsys, tmp_path, video)
    assert "scan.mp4" in err and "64×48 pixels" in err
