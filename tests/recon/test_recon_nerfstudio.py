"""`metasim recon` on a nerfstudio folder (transforms.json + images, what Polycam/Record3D
exports processed by nerfstudio and `ns-process-data` give): the same synthetic scan,
written once in metasim's capture format and once as nerfstudio writes it (OpenGL camera
axes, pixel centres at +0.5, depth in millimetres, frames listed out of order), gives the
same scene; bad folders exit 2 naming transforms.json's field or the missing file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from PIL import Image

from metasim.cli.main import main
from metasim.recon import ReconOptions, reconstruct
from metasim.recon import inputs as inp
from metasim.recon.camera import Intrinsics
from metasim.recon.frame import apply
from metasim.recon.nerfstudio import read_scan
from metasim.recon.synthetic import TRUTH, render_scan, write_rgbd_capture
from tests.recon.recon_truth import centroid_errors

N_FRAMES = 40  # RGB: two-view stereo needs close views (9 degrees apart); RGB-D uses every 2nd
GL = np.diag([1.0, -1.0, -1.0, 1.0])  # OpenCV camera axes <-> OpenGL (nerfstudio's)


def write_nerfstudio(
    folder: Path,
    rgb: np.ndarray,
    depth: np.ndarray | None,
    poses: np.ndarray,
    intr: Intrinsics,
    per_frame_camera: bool = False,
    distortion: dict[str, float] | None = None,
) -> None:
    """A nerfstudio folder: images/frame_NNNNN.png, depth/frame_NNNNN.png (uint16 mm),
    transforms.json with `poses` (N, 4, 4 OpenCV camera-to-world) in OpenGL axes, the
    camera at the top level or on every frame (as Polycam's processing writes it), and
    the frames listed in reverse order."""
    (folder / "images").mkdir(parents=True)
    camera = {
        "fl_x": intr.fx,
        "fl_y": intr.fy,
        "cx": intr.cx + 0.5,  # nerfstudio/COLMAP pixel centres sit at +0.5
        "cy": intr.cy + 0.5,
        "w": intr.width,
        "h": intr.height,
    }
    frames = []
    for i, img in enumerate(rgb):
        name = f"frame_{i + 1:05d}.png"
        Image.fromarray(img).save(folder / "images" / name)
        frame: dict[str, Any] = {
            "file_path": f"images/{name}",
            "transform_matrix": (poses[i] @ GL).tolist(),
        }
        if depth is not None:
            (folder / "depth").mkdir(exist_ok=True)
            mm = np.clip(np.round(depth[i] * 1000.0), 0, 65535).astype(np.uint16)
            Image.fromarray(mm).save(folder / "depth" / name)
            frame["depth_file_path"] = f"depth/{name}"
        frames.append({**frame, **camera} if per_frame_camera else frame)
    meta: dict[str, Any] = {"camera_model": "OPENCV", "k1": 0.0, "k2": 0.0, "p1": 0.0, "p2": 0.0}
    meta.update(distortion or {})
    if not per_frame_camera:
        meta.update(camera)
    meta["applied_transform"] = np.eye(4)[:3].tolist()  # read by nerfstudio, not by metasim
    meta["frames"] = frames[::-1]
    (folder / "transforms.json").write_text(json.dumps(meta, indent=1))


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One synthetic orbit of the tabletop in four folders: metasim RGB-D, metasim RGB +
    poses (no depth/), nerfstudio RGB-D, nerfstudio RGB with its poses."""
    work = tmp_path_factory.mktemp("nerfstudio")
    rgb, depth, poses, intr = render_scan(work, n=N_FRAMES)
    half = slice(None, None, 2)
    write_rgbd_capture(work / "metasim_rgbd", rgb[half], depth[half], poses[half], intr)
    write_rgbd_capture(work / "metasim_rgb", rgb, depth, poses, intr)
    for sub in (work / "metasim_rgb" / "depth").iterdir():
        sub.unlink()
    (work / "metasim_rgb" / "depth").rmdir()
    write_nerfstudio(work / "ns_rgbd", rgb[half], depth[half], poses[half], intr)
    write_nerfstudio(work / "ns_rgb", rgb, None, poses, intr, per_frame_camera=True)
    return {"work": work, "poses": poses, "intr": intr, "depth": depth, "rgb": rgb}


DISTORTION = {"k1": -0.12, "k2": 0.05, "p1": 0.002, "p2": -0.001, "k3": 0.0}


def distort(images: np.ndarray, intr: Intrinsics, interp: int) -> np.ndarray:
    """What a lens with `DISTORTION` would have shot (N, H, W[, 3]): each distorted pixel
    samples the pinhole image where its ray lands."""
    h, w = images.shape[1:3]
    u, v = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    dist = np.array([DISTORTION[k] for k in ("k1", "k2", "p1", "p2", "k3")])
    pts = np.stack([u.ravel(), v.ravel()], axis=1)[:, None]
    ideal = cv2.undistortPoints(pts, intr.matrix, dist, P=intr.matrix).reshape(h, w, 2)
    return np.stack([cv2.remap(im, ideal[..., 0], ideal[..., 1], interp) for im in images])


def _reconstruct(scan: dict[str, Any], name: str) -> dict[str, Any]:
    out = scan["work"] / f"{name}_out"
    return reconstruct(scan["work"] / name, out, ReconOptions(quiet=True))


def _same_scene(ours: dict[str, Any], theirs: dict[str, Any]) -> list[float]:
    """Distance (m) from each object of `ours` to its match in `theirs`, compared in the
    scan's world frame (both folders hold the same poses): the scene frame's heading is
    the table's long axis, whose sign a run may pick either way. One-to-one, same count."""
    a, b = _world_objects(ours), _world_objects(theirs)
    assert len(a) == len(b)
    gaps = np.linalg.norm(a[:, None] - b[None], axis=2)
    match = gaps.argmin(axis=1)
    assert sorted(match.tolist()) == list(range(len(b)))
    return gaps[np.arange(len(a)), match].tolist()


def _world_objects(report: dict[str, Any]) -> np.ndarray:
    """(M, 3) the objects' positions in the scan's world frame."""
    scene_to_world = np.linalg.inv(np.asarray(report["world_to_scene"]))
    return apply(scene_to_world, np.array([o["pos"] for o in report["scene"]["objects"]]))


@pytest.mark.slow
def test_the_reader_gives_metasims_camera_and_poses(scan: dict[str, Any]) -> None:
    ns = read_scan(scan["work"] / "ns_rgbd")
    n = N_FRAMES // 2
    assert [p.name for p in ns.frames] == [f"frame_{i + 1:05d}.png" for i in range(n)]
    assert ns.intrinsics == scan["intr"]  # pixel-centre shift undone exactly
    np.testing.assert_allclose(ns.poses, scan["poses"][::2], atol=1e-12)
    depth = inp.read_depth(ns.depths[3], inp.DEPTH_UNIT)
    np.testing.assert_allclose(depth, scan["depth"][6], atol=6e-4)  # mm rounding


@pytest.mark.slow
def test_rgbd_nerfstudio_folder_gives_the_same_scene(scan: dict[str, Any]) -> None:
    ours, theirs = _reconstruct(scan, "metasim_rgbd"), _reconstruct(scan, "ns_rgbd")
    assert theirs["format"] == "nerfstudio" and theirs["kind"] == "rgbd"
    assert theirs["poses"]["source"] == "given (transforms.json)"
    assert len(theirs["scene"]["objects"]) == len(TRUTH)
    gaps = _same_scene(ours, theirs)
    errors = centroid_errors(theirs)
    print("recon nerfstudio rgbd: gaps (m)", gaps, "centroid errors to the truth (m)", errors)
    assert max(gaps) < 0.005, gaps
    assert max(errors.values()) < 0.01, errors


@pytest.mark.slow
def test_distorted_nerfstudio_folder_is_undistorted_to_the_same_scene(
    scan: dict[str, Any],
) -> None:
    """`ns-process-data` keeps COLMAP's lens distortion; metasim undistorts the frames."""
    half = slice(None, None, 2)
    rgb, depth = scan["rgb"][half], scan["depth"][half]
    folder = scan["work"] / "ns_distorted"
    bent_rgb = distort(rgb, scan["intr"], cv2.INTER_LINEAR)
    bent_depth = distort(depth, scan["intr"], cv2.INTER_NEAREST)
    assert np.abs(bent_rgb.astype(int) - rgb).mean() > 10  # the lens moved the pixels
    poses = scan["poses"][half]
    write_nerfstudio(folder, bent_rgb, bent_depth, poses, scan["intr"], distortion=DISTORTION)
    ours, theirs = _reconstruct(scan, "metasim_rgbd"), _reconstruct(scan, "ns_distorted")
    assert len(list((scan["work"] / "ns_distorted_out" / ".recon" / "undistorted").rglob("*"))) > 0
    gaps = _same_scene(ours, theirs)
    errors = centroid_errors(theirs)
    print("recon nerfstudio distorted: gaps (m)", gaps, "errors to the truth (m)", errors)
    assert max(gaps) < 0.005, gaps
    assert max(errors.values()) < 0.01, errors


@pytest.mark.slow  # two RGB-only reconstructions (stereo + fusion): ~1 min on the shared CPU
def test_rgb_nerfstudio_folder_with_poses_gives_the_same_scene(scan: dict[str, Any]) -> None:
    ours, theirs = _reconstruct(scan, "metasim_rgb"), _reconstruct(scan, "ns_rgb")
    assert ours["kind"] == theirs["kind"] == "images"
    assert theirs["poses"]["source"] == "given (transforms.json)"
    assert theirs["scale"]["factor"] == 1.0 and "RGB-only" in theirs["geometry"]["path"]
    assert len(theirs["scene"]["objects"]) == len(TRUTH)
    gaps = _same_scene(ours, theirs)
    errors = centroid_errors(theirs)
    print("recon nerfstudio rgb: gaps (m)", gaps, "centroid errors to the truth (m)", errors)
    assert max(gaps) < 0.005, gaps
    assert max(errors.values()) < 0.02, errors


# ---------------------------------------------------------------- bad folders: exit 2


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A small valid nerfstudio RGB-D folder (3 frames of noise, 32x24)."""
    n, w, h = 3, 32, 24
    rgb = np.random.default_rng(0).integers(0, 255, (n, h, w, 3), dtype=np.uint8)
    depth = np.full((n, h, w), 0.8, dtype=np.float32)
    write_nerfstudio(tmp_path / "ns", rgb, depth, np.tile(np.eye(4), (n, 1, 1)), _intr(w, h))
    return tmp_path / "ns"


def _intr(w: int, h: int) -> Intrinsics:
    return Intrinsics.from_fovy(50, w, h)


def _edit(folder: Path, change: Any) -> None:
    path = folder / "transforms.json"
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


def _recon_error(capsys: pytest.CaptureFixture[str], folder: Path) -> str:
    code = main(["recon", str(folder), "--out", str(folder.parent / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    return err


def test_the_tiny_folder_is_valid(tiny: Path) -> None:
    src = inp.detect(tiny)
    assert src.kind == "rgbd" and src.format == "nerfstudio" and len(src.depths) == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.pop("fl_x"), "frames[0] (images/frame_00003.png): no number for fl_x"),
        (lambda m: m.update(h="tall"), "no number for h"),
        (lambda m: m["frames"][1].pop("file_path"), "frames[1].file_path: missing"),
        (lambda m: m.update(frames=[]), "frames: the list is empty"),
        (lambda m: m.pop("frames"), "expected a JSON object with a 'frames' list"),
        (lambda m: m.update(k4=0.1), "distortion k4=0.1: expected numbers k1, k2, k3, p1, p2"),
        (lambda m: m.update(k2="x"), "distortion k2='x'"),
        (lambda m: m.update(camera_model="OPENCV_FISHEYE"), "camera_model: expected a pinhole"),
        (lambda m: m["frames"][2].update(fl_x=99.0), "metasim recon needs one camera"),
        (lambda m: m["frames"][0].pop("depth_file_path"), "no depth_file_path, but other"),
    ],
)
def test_bad_transforms_fields(
    tiny: Path, capsys: pytest.CaptureFixture[str], change: Any, message: str
) -> None:
    _edit(tiny, change)
    err = _recon_error(capsys, tiny)
    assert "transforms.json" in err and message in err, err


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        (None, "transform_matrix: expected a 4x4 (or 3x4) camera-to-world matrix of numbers"),
        ([[1, 0, 0], [0, 1, 0]], "got shape (2, 3)"),
        ([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]], "last row must be [0, 0, 0, 1]"),
        ([[2, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], "3x3 block is not a rotation"),
        ([[1, 0, 0, 0], [0, 1, 0, "x"], [0, 0, 1, 0]], "matrix of numbers"),
        # issue #33 item 6: a NaN was reported as "... got shape (4, 4)"
        (
            [[1, 0, 0, 0], [0, 1, 0, float("nan")], [0, 0, 1, 0], [0, 0, 0, 1]],
            "transform_matrix[1][3]: expected a finite number, got nan",
        ),
        ([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, float("inf")]], "[2][3]: expected a finite"),
    ],
)
def test_bad_transform_matrix(
    tiny: Path, capsys: pytest.CaptureFixture[str], matrix: Any, message: str
) -> None:
    _edit(tiny, lambda m: m["frames"][1].update(transform_matrix=matrix))
    err = _recon_error(capsys, tiny)
    assert "transforms.json" in err and "frames[1] (images/frame_00002.png)" in err
    assert message in err, err


def test_missing_image_and_depth_files(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tiny / "depth" / "frame_00002.png").unlink()
    err = _recon_error(capsys, tiny)
    assert "frame_00002.png: no such file" in err and "depth_file_path" in err, err
    (tiny / "images" / "frame_00001.png").unlink()
    err = _recon_error(capsys, tiny)
    assert "images/frame_00001.png: no such file" in err and ".file_path" in err, err


@pytest.mark.parametrize(
    ("field", "name"),
    [("file_path", "../outside.png"), ("depth_file_path", "OUTSIDE"), ("file_path", "link.png")],
)
def test_files_outside_the_folder_are_refused_naming_the_field(
    tiny: Path, capsys: pytest.CaptureFixture[str], field: str, name: str
) -> None:
    """A scan reads only files inside its folder: `../x`, an absolute path and a link
    that leads out are refused naming the field (issue #33 item 6: they were followed)."""
    outside = tiny.parent / "outside.png"
    outside.write_bytes((tiny / "images" / "frame_00001.png").read_bytes())
    (tiny / "link.png").symlink_to(outside)
    name = str(outside) if name == "OUTSIDE" else name
    _edit(tiny, lambda m: m["frames"][1].update({field: name}))
    err = _recon_error(capsys, tiny)
    assert "transforms.json: frames[1]" in err and f".{field}: " in err, err
    assert "lies outside the scan's folder" in err, err


def test_not_json(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tiny / "transforms.json").write_text('{"frames": [')
    err = _recon_error(capsys, tiny)
    assert "transforms.json" in err and "not valid JSON" in err, err


def test_depth_in_millimetres_whatever_the_file_type(tmp_path: Path) -> None:
    """nerfstudio scales .npy and PNG depth alike by depth_unit_scale_factor (1e-3)."""
    mm = np.array([[500, 1250]], dtype=np.uint16)
    np.save(tmp_path / "d.npy", mm.astype(np.float32))
    Image.fromarray(mm).save(tmp_path / "d.png")
    for name in ("d.npy", "d.png"):
        np.testing.assert_allclose(inp.read_depth(tmp_path / name, 1e-3), [[0.5, 1.25]])
    np.testing.assert_allclose(inp.read_depth(tmp_path / "d.png"), [[0.5, 1.25]])  # metasim's
