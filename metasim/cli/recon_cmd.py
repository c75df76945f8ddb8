"""`metasim recon INPUT --out scenes/NAME/`: a phone scan to a scene you can evaluate in."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from metasim.cli.verbs import verb
from metasim.guards import OUT_DIR, bounded_float, bounded_int, check_out_dir


def add_parser(verbs: Any) -> None:
    rec = verbs.add_parser("recon", help="reconstruct a scene from an RGB-D capture or a video")
    rec.add_argument("input", help="an RGB-D capture folder, a video file or an image folder")
    rec.add_argument(
        "--out", type=OUT_DIR, required=True, help="output folder, e.g. scenes/my_table/"
    )
    rec.add_argument(
        "--max-frames", type=bounded_int(1, 10_000), default=60, help="frames kept from the scan"
    )
    rec.add_argument(
        "--voxel",
        type=bounded_float(0, 1, open_lo=True),
        default=0.004,
        help="TSDF voxel size in metres",
    )
    rec.add_argument(
        "--depth-max",
        type=bounded_float(0, 100, open_lo=True),
        default=2.0,
        help="ignore depth beyond (m)",
    )
    rec.add_argument(
        "--holdout",
        type=bounded_int(0, 10_000),
        default=8,
        help="hold every k-th frame out of fusion to measure PSNR (0: none)",
    )
    rec.add_argument(
        "--scale", type=bounded_float(0, 1e6, open_lo=True), help="RGB-only: metres per SfM unit"
    )
    rec.add_argument(
        "--marker-size",
        type=bounded_float(0, 10, open_lo=True),
        help="RGB-only: side (m) of an ArUco DICT_4X4_50 marker in the scan",
    )
    rec.add_argument("--intrinsics", help="RGB-only: intrinsics.json of the video's camera")
    rec.add_argument(
        "--splats",
        action="store_true",
        help="also fit the background as 3D Gaussians on the CPU (background_splats.ply)",
    )
    rec.add_argument(
        "--splat-iters",
        type=bounded_int(1, 100_000),
        help="with --splats: refinement steps, one training view each (default 300)",
    )
    rec.add_argument(
        "--splat-seconds",
        type=bounded_float(0, 86_400, open_lo=True),
        help="with --splats: time budget of the refinement in seconds (default 900)",
    )
    rec.add_argument(
        "--splat-count",
        type=bounded_int(1, 2_000_000),
        help="with --splats: at most this many Gaussians (default 30000)",
    )
    rec.add_argument("--quiet", action="store_true", help="no progress bars or summary")


def run_recon_cli(args: argparse.Namespace) -> int:
    try:
        from metasim.recon import ReconOptions, reconstruct
    except ImportError as exc:
        from metasim.errors import MetasimInputError

        raise MetasimInputError(
            "metasim recon",
            [f"needs the 'recon' extra (missing module {exc.name!r})"],
            "Install it with: pip install -e '.[recon]'",
        ) from None

    for flag, value in (
        ("--max-frames", args.max_frames),
        ("--voxel", args.voxel),
        ("--depth-max", args.depth_max),
        ("--scale", args.scale),
        ("--marker-size", args.marker_size),
    ):
        if value is not None and value <= 0:
            from metasim.errors import MetasimInputError

            raise MetasimInputError("command line", [f"{flag}: expected a number > 0, got {value}"])
    splat = {
        "splat_iters": args.splat_iters,
        "splat_seconds": args.splat_seconds,
        "splat_count": args.splat_count,
    }
    given = {k: v for k, v in splat.items() if v is not None}
    if given and not args.splats:
        from metasim.errors import MetasimInputError

        flag = "--" + next(iter(given)).replace("_", "-")
        raise MetasimInputError("command line", [f"{flag}: only with --splats"])
    opts = ReconOptions(
        max_frames=args.max_frames,
        voxel=args.voxel,
        depth_max=args.depth_max,
        holdout=args.holdout,
        scale=args.scale,
        marker_size=args.marker_size,
        intrinsics=args.intrinsics,
        splats=args.splats,
        quiet=args.quiet,
        **given,
    )
    report = reconstruct(Path(args.input), check_out_dir(args.out, "--out"), opts)
    if not args.quiet:
        summary = {
            "scene": report["scene"]["file"],
            "geometry": report["geometry"]["path"],
            "poses": report["poses"]["source"],
            "registered": f"{report['poses']['registered']}/{report['poses']['of']}",
            "scale": report["scale"]["source"],
            "objects": [o["name"] for o in report["scene"]["objects"]],
            "mean_psnr_db": round(report["quality"]["mean_psnr_db"], 2),
        }
        if "splats" in report:
            scores = report["splats"]["scores"]
            summary["splats"] = report["splats"]["file"]
            summary["held_out_psnr_db"] = {
                k: round(v["mean_psnr_db"], 2) for k, v in scores.items()
            }
        print(json.dumps(summary, indent=1))
    return 0


verb("recon", add_parser, run_recon_cli)
