"""Stage 2: camera poses by incremental structure from motion with pycolmap (SIFT
features, exhaustive matching for short scans, sequential for long ones)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from metasim.errors import MetasimInputError
from metasim.recon.camera import Intrinsics

MIN_REGISTERED = 5


@dataclass(frozen=True)
class SfmResult:
    """Registered frames' poses (camera-to-world, OpenCV, SfM units), the sparse points
    (P, 3) with colours (P, 3) in [0, 1], and the solved intrinsics."""

    poses: np.ndarray  # (N, 4, 4), NaN rows for unregistered frames
    registered: np.ndarray  # (N,) bool
    points: np.ndarray
    colors: np.ndarray
    intrinsics: Intrinsics
    reprojection_error: float  # mean, pixels
    observations: list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # per frame: uv, xyz, ok


def run_sfm(
    image_dir: Path, names: list[str], work: Path, intr: Intrinsics | None, source: str
) -> SfmResult:
    """SfM over the images `names` in `image_dir`; raise when fewer than MIN_REGISTERED
    frames register. Known intrinsics (PINHOLE) are kept fixed; otherwise a
    SIMPLE_RADIAL camera is estimated."""
    import pycolmap

    pycolmap.logging.minloglevel = 2  # warnings and errors only
    pycolmap.set_random_seed(0)  # RANSAC draws: the same scan gives the same poses
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    db = work / "database.db"
    reader = pycolmap.ImageReaderOptions()
    if intr is not None:
        reader.camera_model = "PINHOLE"
        # COLMAP puts pixel centres at +0.5, OpenCV (and these intrinsics) at integers.
        pp = (intr.fx, intr.fy, intr.cx + 0.5, intr.cy + 0.5)
        reader.camera_params = ",".join(str(v) for v in pp)
    else:
        reader.camera_model = "SIMPLE_RADIAL"
    extraction = pycolmap.FeatureExtractionOptions()
    extraction.use_gpu = False
    extraction.sift.max_num_features = 4096
    pycolmap.extract_features(
        db,
        image_dir,
        image_names=names,
        camera_mode=pycolmap.CameraMode.SINGLE,
        reader_options=reader,
        extraction_options=extraction,
        device=pycolmap.Device.cpu,
    )
    matching = pycolmap.FeatureMatchingOptions()
    matching.use_gpu = False
    if len(names) <= 120:
        pycolmap.match_exhaustive(db, matching_options=matching, device=pycolmap.Device.cpu)
    else:
        pycolmap.match_sequential(db, matching_options=matching, device=pycolmap.Device.cpu)
    options = pycolmap.IncrementalPipelineOptions()
    # One mapping thread: multithreaded bundle adjustment sums in a varying order, so the
    # same scan gave poses (and object centroids) that moved by ~1 cm from run to run.
    options.num_threads = 1
    if intr is not None:
        options.ba_refine_focal_length = False
        options.ba_refine_principal_point = False
        options.ba_refine_extra_params = False
    maps = pycolmap.incremental_mapping(db, image_dir, work / "sparse", options=options)
    if not maps:
        _too_few(source, 0, len(names))
    rec = max(maps.values(), key=lambda r: r.num_reg_images())
    if rec.num_reg_images() < MIN_REGISTERED:
        _too_few(source, rec.num_reg_images(), len(names))
    return _result(rec, names)


def _too_few(source: str, got: int, total: int) -> None:
    raise MetasimInputError(
        source,
        [
            f"structure from motion registered {got} of {total} frames, expected at least "
            f"{MIN_REGISTERED}"
        ],
        "Scan slowly around the scene with overlap between frames, in good light, "
        "over a textured surface",
    )


def _result(rec: object, names: list[str]) -> SfmResult:
    from pycolmap import Reconstruction

    assert isinstance(rec, Reconstruction)
    n = len(names)
    poses = np.full((n, 4, 4), np.nan)
    registered = np.zeros(n, dtype=bool)
    observations: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [
        (np.zeros((0, 2)), np.zeros((0, 3)), np.zeros(0, dtype=bool)) for _ in names
    ]
    index = {name: i for i, name in enumerate(names)}
    for image in rec.images.values():
        if not image.has_pose or image.name not in index:
            continue
        i = index[image.name]
        w2c = np.eye(4)
        w2c[:3, :] = image.cam_from_world().matrix()
        poses[i] = np.linalg.inv(w2c)
        registered[i] = True
        uv, xyz = [], []
        for p2d in image.points2D:
            if p2d.has_point3D():
                uv.append(np.asarray(p2d.xy) - 0.5)
                xyz.append(rec.points3D[p2d.point3D_id].xyz)
        observations[i] = (np.asarray(uv), np.asarray(xyz), np.ones(len(uv), dtype=bool))
    pts = np.array([p.xyz for p in rec.points3D.values()]).reshape(-1, 3)
    cols = np.array([p.color for p in rec.points3D.values()]).reshape(-1, 3) / 255.0
    cam = next(iter(rec.cameras.values()))
    return SfmResult(
        poses,
        registered,
        pts,
        cols,
        _intrinsics(cam),
        float(rec.compute_mean_reprojection_error()),
        observations,
    )


def _intrinsics(cam: object) -> Intrinsics:
    params = np.asarray(cam.params)  # type: ignore[attr-defined]
    w, h = int(cam.width), int(cam.height)  # type: ignore[attr-defined]
    if len(params) >= 4 and str(cam.model_name) in ("PINHOLE", "RADIAL", "OPENCV"):  # type: ignore[attr-defined]
        return Intrinsics(params[0], params[1], params[2] - 0.5, params[3] - 0.5, w, h)
    return Intrinsics(params[0], params[0], params[1] - 0.5, params[2] - 0.5, w, h)


def depth_scale(sfm: SfmResult, depths: list[np.ndarray], min_samples: int = 20) -> float | None:
    """Metric scale of an SfM reconstruction from depth maps: the median ratio of the
    sensor depth to the SfM depth of every observed 3D point."""
    ratios = []
    for i, (uv, xyz, _) in enumerate(sfm.observations):
        if not sfm.registered[i] or len(uv) == 0:
            continue
        w2c = np.linalg.inv(sfm.poses[i])
        z_sfm = xyz @ w2c[2, :3] + w2c[2, 3]
        px = np.round(uv).astype(int)
        h, w = depths[i].shape
        ok = (px[:, 0] >= 0) & (px[:, 0] < w) & (px[:, 1] >= 0) & (px[:, 1] < h) & (z_sfm > 0)
        d = depths[i][px[ok, 1], px[ok, 0]]
        good = d > 0
        ratios.append(d[good] / z_sfm[ok][good])
    allr = np.concatenate(ratios) if ratios else np.zeros(0)
    return float(np.median(allr)) if len(allr) >= min_samples else None
