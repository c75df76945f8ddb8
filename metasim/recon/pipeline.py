"""`reconstruct(INPUT, OUT)`: frames -> poses -> geometry -> scale and gravity -> objects ->
scene folder and quality report. Each stage is cached in OUT/.recon/ (see `cache`), so a
rerun skips the stages whose inputs did not change."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import open3d as o3d

from metasim.errors import MetasimInputError
from metasim.guards import replacing, write_atomic
from metasim.recon import inputs as inp
from metasim.recon.cache import StageCache, digest, files_signature
from metasim.recon.camera import Intrinsics
from metasim.recon.frames import resize_max, select, select_video, sharpness
from metasim.recon.geometry import dense_note, mesh_points, tsdf_fuse
from metasim.recon.layout import build_layout, layout_stats, write_scene
from metasim.recon.quality import compare_png, psnr, render_scene
from metasim.recon.scale import resolve_scale
from metasim.recon.stereo import stereo_depths
from metasim.recon.undistort import undistort_source

Tick = Callable[[], None]


@dataclass(frozen=True)
class ReconOptions:
    """Knobs of `metasim recon` (defaults suit a phone scan of a tabletop)."""

    max_frames: int = 60  # frames kept, spread over the scan
    max_side: int = 960  # video/image frames are downscaled to this longer side
    voxel: float = 0.004  # TSDF voxel (m)
    depth_max: float = 2.0  # depth beyond this is ignored (m)
    holdout: int = 8  # every k-th kept frame is held out of fusion for the PSNR check
    scale: float | None = None  # RGB-only: metres per SfM unit, if known
    marker_size: float | None = None  # RGB-only: side of an ArUco marker (m) in view
    intrinsics: str | None = None  # RGB-only: an intrinsics.json for the video's camera
    max_objects: int = 8
    splats: bool = False  # also fit the background as 3D Gaussians (splat_stage)
    splat_iters: int = 300  # refinement steps (one training view each)
    splat_seconds: float = 900.0  # time budget of the refinement
    splat_count: int = 30000  # at most this many Gaussians
    quiet: bool = False


@dataclass
class Frames:
    """The kept frames: image files (in `image_dir`), depth files, poses if given, and
    where the intrinsics came from (`camera_file`, named in errors)."""

    kind: str
    image_dir: Path
    names: list[str]
    depths: list[Path]
    intrinsics: Intrinsics | None
    poses: np.ndarray | None
    camera_file: Path | None = None
    depth_unit: float | None = None  # metres per depth-file unit (None: by file type)


class _Progress:
    """One rich progress bar per stage (or nothing when quiet)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self._bar: Any = None

    @contextmanager
    def stage(self, name: str, total: int | None = None) -> Iterator[Tick]:
        if self.quiet:
            yield lambda: None
            return
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("{task.description:<10}"),
            BarColumn(),
            TextColumn("{task.completed}"),
            TimeElapsedColumn(),
        ) as bar:
            task = bar.add_task(name, total=total)
            yield lambda: bar.advance(task)
            bar.update(task, completed=total or bar.tasks[0].completed)


def reconstruct(source: Path, out: Path, opts: ReconOptions | None = None) -> dict[str, Any]:
    """Run the pipeline; return the report (also written to OUT/report.json)."""
    opts = opts or ReconOptions()
    t0 = time.perf_counter()
    src = inp.detect(source)
    out.mkdir(parents=True, exist_ok=True)
    cache = StageCache(out)
    src = undistort_source(src, cache.path("undistorted"))  # lens distortion, if declared
    bar = _Progress(opts.quiet)
    report: dict[str, Any] = {"input": str(source), "kind": src.kind, "format": src.format}
    report["options"] = asdict(opts)
    frames, key = _frames_stage(src, cache, opts, bar)
    report["frames"] = {"kept": len(frames.names), "names": frames.names}
    poses, intr, sfm_info, key = _poses_stage(src, frames, cache, key, bar)
    report["poses"] = sfm_info
    fused = poses_ok = np.flatnonzero(~np.isnan(poses[:, 0, 0]))
    if opts.holdout > 1 and len(poses_ok) >= 2 * opts.holdout:
        fused = np.array(
            [i for k, i in enumerate(poses_ok) if k % opts.holdout != opts.holdout // 2]
        )
    held = np.setdiff1d(poses_ok, fused) if len(fused) < len(poses_ok) else poses_ok
    sfm_ran = src.kind != "rgbd" and frames.poses is None
    sparse = np.load(cache.path("sfm.npz"))["points"] if sfm_ran else None
    scale, scale_info = resolve_scale(src.kind, frames, poses, intr, opts, sparse, str(source))
    report["scale"] = scale_info
    geo, key = _geometry_stage(src, frames, poses, intr, fused, cache, key, opts, bar, scale)
    report["geometry"] = geo["info"]
    ply = cache.path("fused.ply")
    geo_files = files_signature([ply]) if ply.exists() else None
    key = digest(key, "scene", scale, opts.max_objects, held.tolist(), geo_files, geo["info"])
    done = [out / "scene.yaml", out / "report.json", out / "report.png"]
    spacing = opts.voxel if src.kind == "rgbd" else 0.006  # stereo/sparse: coarser
    drop_file = cache.path("objects_idx.npy")  # the fused points that became objects
    if not cache.fresh("scene", key, [*done, drop_file]):
        with bar.stage("scene", 1) as tick:
            layout = build_layout(
                geo["points"],
                geo["colors"],
                geo["mesh"],
                poses[poses_ok],
                scale,
                spacing=spacing,
                source=str(source),
                max_objects=opts.max_objects,
            )
            view = int(held[0] if len(held) else poses_ok[0])
            desc = f"Reconstructed by metasim recon ({geo['info']['path']}) from {source}"
            scene_file, target = write_scene(out, layout, poses[view], intr, desc, str(source))
            with replacing(drop_file) as tmp, open(tmp, "wb") as fh:
                np.save(fh, layout.object_points)
            tick()
        report["scene"] = {"file": str(scene_file), "scan_camera_frame": frames.names[view]}
        report["scene"].update(layout_stats(layout))
        report["task"] = target.report()
        report["world_to_scene"] = layout.world_to_scene.tolist()
        report["quality"] = _quality(out, frames, poses, intr, held, layout, scale, bar)
        report["seconds"] = round(time.perf_counter() - t0, 2)
        write_atomic(out / "report.json", json.dumps(report, indent=1, default=_json_default))
        cache.mark("scene", key)
    report = dict(json.loads((out / "report.json").read_text()))
    if opts.splats or report.pop("splats", None):  # a splat section follows the option
        from metasim.recon.splat_stage import link_background, run_splat_stage

        if opts.splats:
            with bar.stage("splats", 1) as tick:
                fit = (frames, poses, intr, fused, held, geo, spacing, opts)
                report["splats"] = run_splat_stage(out, cache, key, *fit)
                tick()
        write_atomic(out / "report.json", json.dumps(report, indent=1, default=_json_default))
        link_background(out / "scene.yaml", opts.splats)  # the scene uses the splats or not
    return report


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


# ---------------------------------------------------------------- stage 1: frames


def _frames_stage(
    src: inp.Source, cache: StageCache, opts: ReconOptions, bar: _Progress
) -> tuple[Frames, str]:
    sig = (
        files_signature([src.path])
        if src.kind == "video"
        else files_signature(list(src.frames) + list(src.depths))
    )
    key = digest("frames", str(src.path.resolve()), sig, opts.max_frames, opts.max_side)
    record = cache.path("frames.json")
    if not cache.fresh("frames", key, [record]):
        with bar.stage("frames", len(src.frames) or None) as tick:
            names = _select_frames(src, cache, opts, tick)
        write_atomic(record, json.dumps({"names": names}))
        cache.mark("frames", key)
    names = json.loads(record.read_text())["names"]
    return _frames_from(src, names, cache, opts), key


def _select_frames(src: inp.Source, cache: StageCache, opts: ReconOptions, tick: Tick) -> list[str]:
    if src.kind == "video":
        keep, imgs = select_video(src.path, opts.max_frames, opts.max_side, tick)
        folder = cache.path("frames")
        folder.mkdir(exist_ok=True)
        from PIL import Image

        names = [f"{i:06d}.png" for i in keep]
        for name, img in zip(names, imgs, strict=True):
            with replacing(folder / name) as tmp:
                Image.fromarray(img).save(tmp, format="PNG")
        return names
    scores = []
    for path in src.frames:
        scores.append(sharpness(resize_max(inp.read_rgb(path), 480)))
        tick()
    return [src.name(src.frames[i]) for i in select(scores, opts.max_frames)]


def _frames_from(
    src: inp.Source, names: list[str], cache: StageCache, opts: ReconOptions
) -> Frames:
    if src.kind == "video":
        intr = inp.load_intrinsics(Path(opts.intrinsics)) if opts.intrinsics else None
        return Frames("video", cache.path("frames"), names, [], intr, None)
    by_name = {src.name(p): i for i, p in enumerate(src.frames)}
    idx = [by_name[n] for n in names]
    intr = src.intrinsics
    if intr is None and opts.intrinsics:
        intr = inp.load_intrinsics(Path(opts.intrinsics))
    poses = src.poses[idx] if src.poses is not None else None
    depths = [src.depths[i] for i in idx] if src.depths else []
    return Frames(src.kind, src.folder, names, depths, intr, poses, src.camera_file, src.depth_unit)


# ---------------------------------------------------------------- stage 2: poses


def _poses_stage(
    src: inp.Source, frames: Frames, cache: StageCache, key: str, bar: _Progress
) -> tuple[np.ndarray, Intrinsics, dict[str, Any], str]:
    if frames.poses is not None and frames.intrinsics is not None:
        given = "transforms.json" if src.format == "nerfstudio" else "poses.json"
        n = len(frames.names)
        info = {"source": f"given ({given})", "registered": n, "of": n}
        return frames.poses, frames.intrinsics, info, digest(key, "given", frames.poses.tolist())
    key = digest(key, "sfm", frames.intrinsics)
    npz, meta = cache.path("sfm.npz"), cache.path("sfm.json")
    if not cache.fresh("poses", key, [npz, meta]):
        from metasim.recon.poses import run_sfm

        with bar.stage("poses (SfM)", 1) as tick:
            sfm = run_sfm(
                frames.image_dir,
                frames.names,
                cache.path("colmap"),
                frames.intrinsics,
                str(src.path),
            )
            tick()
        scale = None
        if frames.kind == "rgbd":
            from metasim.recon.poses import depth_scale

            scale = depth_scale(sfm, [inp.read_depth(p, frames.depth_unit) for p in frames.depths])
        with replacing(npz) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, poses=sfm.poses, points=sfm.points, colors=sfm.colors)
        info = {
            "source": "pycolmap incremental SfM",
            "registered": int(sfm.registered.sum()),
            "of": len(frames.names),
            "mean_reprojection_error_px": sfm.reprojection_error,
            "points": len(sfm.points),
            "intrinsics": sfm.intrinsics.to_json(),
            "depth_scale": scale,
        }
        write_atomic(meta, json.dumps(info))
        cache.mark("poses", key)
    data, info = np.load(npz), json.loads(meta.read_text())
    poses = data["poses"].copy()
    if info.get("depth_scale"):
        poses[:, :3, 3] *= info["depth_scale"]
        info["source"] += ", metric scale from depth"
    return poses, Intrinsics(**info["intrinsics"]), info, key


# ---------------------------------------------------------------- stage 3: geometry


def _geometry_stage(
    src: inp.Source,
    frames: Frames,
    poses: np.ndarray,
    intr: Intrinsics,
    fused: np.ndarray,
    cache: StageCache,
    key: str,
    opts: ReconOptions,
    bar: _Progress,
    scale: float,
) -> tuple[dict[str, Any], str]:
    key = digest(key, "geometry", opts.voxel, opts.depth_max, fused.tolist(), scale)
    ply = cache.path("fused.ply")
    rgbd = frames.kind == "rgbd"
    if not cache.fresh("geometry", key, [ply]):
        with bar.stage("fusion" if rgbd else "stereo", len(fused)) as tick:
            if rgbd:
                rgbs, depths = _load_rgbd(frames, fused, intr)
            else:
                rgbs = [inp.read_rgb(frames.image_dir / frames.names[i]) for i in fused]
                depths = stereo_depths(rgbs, poses[fused], intr, gap=1)
            # Voxel and depth range are metric; the poses are in scan units.
            mesh = tsdf_fuse(
                rgbs, depths, poses[fused], intr, opts.voxel / scale, opts.depth_max / scale, tick
            )
        o3d.io.write_triangle_mesh(ply, mesh)
        cache.mark("geometry", key)
    mesh = o3d.io.read_triangle_mesh(ply)
    points, colors = mesh_points(mesh)
    info: dict[str, Any]
    if rgbd:
        info = {"path": "RGB-D: TSDF fusion (Open3D)"}
    elif len(points) >= 2000:
        info = {"path": "RGB-only: two-view stereo (OpenCV SGBM) fused by TSDF (Open3D)"}
    else:
        if frames.poses is not None:  # poses were given: no SfM points to fall back on
            raise MetasimInputError(
                str(src.path),
                [f"two-view stereo found too little geometry ({len(points)} points)"],
                "Give depth with the frames, or more overlapping, textured views",
            )
        data = np.load(cache.path("sfm.npz"))
        return {
            "points": data["points"],
            "colors": data["colors"],
            "mesh": None,
            "info": {
                "path": "RGB-only: sparse SfM points (stereo found too little)",
                "points": len(data["points"]),
                "dense": dense_note(),
            },
        }, key
    info.update(
        {
            "voxel_m": opts.voxel,
            "fused_frames": len(fused),
            "vertices": len(points),
            "triangles": len(mesh.triangles),
        }
    )
    if not rgbd:
        info["dense"] = dense_note()
    return {"points": points, "colors": colors, "mesh": mesh, "info": info}, key


def _load_rgbd(
    frames: Frames, which: np.ndarray, intr: Intrinsics
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rgbs, depths = [], []
    for i in which:
        rgb_path = frames.image_dir / frames.names[i]
        rgb, depth = inp.read_rgb(rgb_path), inp.read_depth(frames.depths[i], frames.depth_unit)
        inp.check_depth_size(frames.depths[i], depth, rgb_path, rgb)
        assert frames.camera_file is not None  # RGB-D inputs declare their camera
        inp.check_intrinsics_size(frames.camera_file, intr, rgb_path, rgb)
        rgbs.append(rgb)
        depths.append(depth)
    return rgbs, depths


# ---------------------------------------------------------------- stage 7: quality


def _quality(
    out: Path,
    frames: Frames,
    poses: np.ndarray,
    intr: Intrinsics,
    held: np.ndarray,
    layout: Any,
    scale: float,
    bar: _Progress,
) -> dict[str, Any]:
    from metasim.recon.frame import pose_to_scene

    views = held[:12]
    scene_poses = np.stack([pose_to_scene(layout.world_to_scene, poses[i]) for i in views])
    with bar.stage("report", 1) as tick:
        renders = render_scene(out / "scene.yaml", scene_poses, intr)
        inputs = np.stack([inp.read_rgb(frames.image_dir / frames.names[i]) for i in views])
        if inputs.shape[1:3] != renders.shape[1:3]:
            raise MetasimInputError(
                str(frames.image_dir), ["the frames do not match the solved camera size"]
            )
        compare_png(out / "report.png", inputs, renders)
        tick()
    values = [psnr(a, b) for a, b in zip(inputs, renders, strict=True)]
    return {
        "views": [frames.names[i] for i in views],
        "held_out": bool(len(held) < len(poses)),
        "psnr_db": values,
        "mean_psnr_db": float(np.mean(values)),
        "png": "report.png",
    }
