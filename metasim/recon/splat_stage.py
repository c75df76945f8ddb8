"""The splat stage of `metasim recon --splats`: the background as 3D Gaussians.

Gaussians start on the fused surface minus the objects (`splat_fit.initial_gaussians`),
are refined against the frames that went into fusion, over the layer of the object
meshes rendered by MuJoCo from the same pose (so that the splats learn the background,
not the objects), and are written in the scene frame (metres) as OUT/background_splats.ply
(`metasim.splats.write_splat_ply`, the INRIA layout). The held-out frames (those the
mesh PSNR uses) are rendered three ways: the scene with its mesh background, the
splats as first placed, and the refined splats (each with the same object meshes), and
compared with the frames by PSNR and SSIM; report_splats.png shows input | mesh | splats.
Cached in OUT/.recon/ like the other stages (`splats` in stages.json).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from metasim.errors import MetasimInputError
from metasim.guards import load_npy, replacing, write_atomic
from metasim.recon import inputs as inp
from metasim.recon.cache import StageCache, digest, files_signature
from metasim.recon.camera import Intrinsics, render_views
from metasim.recon.frame import apply, pose_to_scene
from metasim.recon.quality import psnr, render_scene, scan_model

if TYPE_CHECKING:
    from metasim.recon.splat_fit import View

PLY = "background_splats.ply"
TRAIN_SIDE = 320  # training frames are downscaled to this longer side
LPIPS_NOTE = (
    "not computed: LPIPS needs pretrained network weights (AlexNet/VGG) that are not "
    "available offline"
)


def _need_torch() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise MetasimInputError(
            "metasim recon --splats",
            ["needs torch (the 'torch' extra) for the differentiable splat rasterizer"],
            "Install it with: pip install -e '.[recon,torch]'",
        ) from None


def object_layer(
    scene_file: Path, poses: np.ndarray, intr: Intrinsics
) -> tuple[np.ndarray, np.ndarray]:
    """The scene's objects alone (no background, robot, floor or table fixture) from
    camera-to-scene poses (N, 4, 4): colour (N, H, W, 3) uint8 and depth (N, H, W) m."""
    model, hidden = scan_model(scene_file)
    bg = model.body("background").id
    hidden = np.union1d(hidden, np.flatnonzero(model.geom_bodyid == bg)).astype(int)
    model.geom_matid[hidden] = -1  # a material's colour would override the hiding alpha
    colour = render_views(model, poses, intr, hidden_geoms=hidden)
    depth = render_views(model, poses, intr, depth=True, hidden_geoms=hidden)
    return colour, depth


def _views(
    scene_file: Path, images: list[np.ndarray], poses: np.ndarray, intr: Intrinsics
) -> list[View]:
    import torch

    from metasim.recon.splat_fit import View
    from metasim.recon.splat_raster import Camera

    under, depth = object_layer(scene_file, poses, intr)
    out = []
    for img, pose, col, dep in zip(images, poses, under, depth, strict=True):
        cam = Camera(torch.tensor(np.linalg.inv(pose), dtype=torch.float32), intr)
        out.append(
            View(
                cam,
                torch.tensor(img, dtype=torch.float32) / 255.0,
                torch.tensor(col, dtype=torch.float32) / 255.0,
                torch.tensor(dep, dtype=torch.float32),
            )
        )
    return out


def _resized(img: np.ndarray, intr: Intrinsics) -> np.ndarray:
    from PIL import Image

    if (img.shape[1], img.shape[0]) == (intr.width, intr.height):
        return img
    small = Image.fromarray(img).resize((intr.width, intr.height), Image.Resampling.BOX)
    return np.asarray(small)


def _surface(
    geo: dict[str, Any], drop: np.ndarray, w2s: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The background's points (scene frame, m), colours and unit normals (or None)."""
    keep = np.ones(len(geo["points"]), dtype=bool)
    keep[drop] = False
    pts = apply(w2s, geo["points"][keep])
    normals = None
    mesh = geo["mesh"]
    if mesh is not None:
        if not mesh.has_vertex_normals():
            mesh.compute_vertex_normals()
        n = np.asarray(mesh.vertex_normals)[keep] @ w2s[:3, :3].T
        normals = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
    return pts, np.asarray(geo["colors"])[keep], normals


def _images(frames: Any, which: np.ndarray, intr: Intrinsics) -> list[np.ndarray]:
    return [_resized(inp.read_rgb(frames.image_dir / frames.names[i]), intr) for i in which]


def run_splat_stage(
    out: Path,
    cache: StageCache,
    key: str,
    frames: Any,
    poses: np.ndarray,
    intr: Intrinsics,
    train: np.ndarray,
    held: np.ndarray,
    geo: dict[str, Any],
    spacing: float,
    opts: Any,
) -> dict[str, Any]:
    """Fit (or take from the cache) the background splats; return the report's `splats`
    section. `train`/`held`: indices of the fused and the held-out frames; `spacing`:
    the fused surface's point spacing (m)."""
    _need_torch()
    report = json.loads((out / "report.json").read_text())
    drop_file = cache.path("objects_idx.npy")
    key = digest(
        key,
        "splats",
        _scene_content(out / "scene.yaml"),
        files_signature([drop_file]),
        opts.splat_iters,
        opts.splat_seconds,
        opts.splat_count,
    )
    record = cache.path("splats.json")
    if cache.fresh("splats", key, [out / PLY, record]):
        return dict(json.loads(record.read_text()))
    w2s = np.asarray(report["world_to_scene"])
    section = _fit(out, frames, poses, intr, train, held, geo, spacing, opts, w2s, drop_file)
    write_atomic(record, json.dumps(section, indent=1))
    cache.mark("splats", key)
    return section


def _fit(
    out: Path,
    frames: Any,
    poses: np.ndarray,
    intr: Intrinsics,
    train: np.ndarray,
    held: np.ndarray,
    geo: dict[str, Any],
    spacing: float,
    opts: Any,
    w2s: np.ndarray,
    drop_file: Path,
) -> dict[str, Any]:
    from metasim.recon import splat_fit as sf
    from metasim.splats import write_splat_ply

    t0 = time.perf_counter()
    scene = out / "scene.yaml"
    pts, cols, normals = _surface(geo, load_npy(drop_file, "object point index"), w2s)
    init = sf.initial_gaussians(pts, cols, normals, opts.splat_count, spacing)
    small = intr.scaled(min(1.0, TRAIN_SIDE / max(intr.width, intr.height)))
    train_poses = np.stack([pose_to_scene(w2s, poses[i]) for i in train])
    views = _views(scene, _images(frames, train, small), train_poses, small)
    before = sf.photometric_loss(init, views)
    fitted, steps = sf.refine(init, views, opts.splat_iters, opts.splat_seconds, spacing)
    after = sf.photometric_loss(fitted, views)
    with replacing(out / PLY) as tmp:
        write_splat_ply(tmp, sf.to_splats(fitted))
    fit_s = time.perf_counter() - t0
    test = held[:12]
    test_poses = np.stack([pose_to_scene(w2s, poses[i]) for i in test])
    inputs = np.stack(_images(frames, test, intr))
    tests = _views(scene, list(inputs), test_poses, intr)
    renders = {
        "mesh": render_scene(scene, test_poses, intr),
        "splat_initial": _render_all(init, tests),
        "splat": _render_all(fitted, tests),
    }
    _compare_png(out / "report_splats.png", inputs, renders["mesh"], renders["splat"])
    scores: dict[str, Any] = {}
    for name, imgs in renders.items():
        p = [psnr(a, b) for a, b in zip(inputs, imgs, strict=True)]
        s = [sf.ssim(a, b) for a, b in zip(inputs, imgs, strict=True)]
        scores[name] = {"mean_psnr_db": float(np.mean(p)), "mean_ssim": float(np.mean(s))}
        scores[name].update({"psnr_db": p, "ssim": s})
    return {
        "file": PLY,
        "frame": "scene (metres)",
        "gaussians": len(fitted.means),
        "initialised_from": "fused surface minus the objects: merged points, local spacing",
        "steps": steps,
        "steps_asked": opts.splat_iters,
        "fit_seconds": round(fit_s, 2),
        "training_views": len(views),
        "training_size": [small.width, small.height],
        "train_l1": {"initial": before, "refined": after},
        "views": [frames.names[i] for i in test],
        "held_out": bool(len(held) < len(poses)),
        "scores": scores,
        "lpips": LPIPS_NOTE,
        "png": "report_splats.png",
    }


def _render_all(g: Any, views: list[View]) -> np.ndarray:
    import torch

    from metasim.recon.splat_fit import render_view

    with torch.no_grad():
        imgs = [render_view(g, v).clamp(0, 1).numpy() for v in views]
    return (np.stack(imgs) * 255.0 + 0.5).astype(np.uint8)


def _compare_png(path: Path, inputs: np.ndarray, mesh: np.ndarray, splat: np.ndarray) -> None:
    from PIL import Image

    pick = np.linspace(0, len(inputs) - 1, min(4, len(inputs))).round().astype(int)
    rows = [np.concatenate([inputs[i], mesh[i], splat[i]], axis=1) for i in pick]
    with replacing(path) as tmp:
        Image.fromarray(np.concatenate(rows, axis=0)).save(tmp, format="PNG")


def _scene_content(scene_file: Path) -> str:
    """The scene file's content without its `background:` entry (which `link_background`
    writes after the fit), as the splat stage's cache key reads it."""
    from ruamel.yaml import YAML

    data = YAML(typ="safe").load(scene_file.read_text())
    data.pop("background", None)
    return json.dumps(data, sort_keys=True, default=str)


def link_background(scene_file: Path, on: bool) -> bool:
    """Point the scene at its splat background (`background: {splats:
    background_splats.ply, fallback: background}`: the warp renderer draws the splats and
    hides the scan mesh, OpenGL draws the mesh) when `on` and the file is there; remove
    the entry otherwise. Rewrites scene.yaml only when that changes it (comments kept);
    True when it did."""
    from ruamel.yaml import YAML

    yaml = YAML()
    yaml.default_flow_style = None
    yaml.width = 100
    data = yaml.load(scene_file.read_text())
    want = {"splats": PLY, "fallback": "background"}
    has = dict(data["background"]) if "background" in data else None
    if on and (scene_file.parent / PLY).is_file():
        if has == want:
            return False
        data["background"] = want
    elif has is None:
        return False
    else:
        del data["background"]
    with replacing(scene_file) as tmp, tmp.open("w") as fh:
        yaml.dump(data, fh)
    return True
