"""Held-out PSNR and SSIM of `metasim recon --splats` against the mesh background, on
the synthetic ground-truth scans (docs/recon.md, "Splat backgrounds").

    PYTHONPATH=. .venv/bin/python bench/recon_splats.py [--iters 300] [--scenes tabletop room]

Renders each scan (40 frames, 320 x 240, RGB-D with poses), reconstructs it with the
default options plus `--splats`, and prints one row per scene: the held-out PSNR / SSIM
of the mesh background, of the splats as initialised and as refined, the training L1
before and after, the Gaussian count and the fit time. One torch thread.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from metasim.recon import ReconOptions, reconstruct
from metasim.recon.synthetic import ROOM, TABLETOP, render_scan, write_rgbd_capture

SCENES = {"tabletop": TABLETOP, "room": ROOM}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=300)
    parser.add_argument("--scenes", nargs="+", default=list(SCENES), choices=list(SCENES))
    args = parser.parse_args()
    torch.set_num_threads(1)
    work = Path(tempfile.mkdtemp())
    print("| scene | mesh PSNR / SSIM | splats initial | splats refined | train L1 | N | fit s |")
    print("|---|---|---|---|---|---|---|")
    for name in args.scenes:
        rgb, depth, poses, intr = render_scan(work / name, n=40, scene=SCENES[name])
        write_rgbd_capture(work / name / "capture", rgb, depth, poses, intr)
        opts = ReconOptions(quiet=True, splats=True, splat_iters=args.iters)
        splats = reconstruct(work / name / "capture", work / name / "out", opts)["splats"]
        s = splats["scores"]
        cells = [f"{s[k]['mean_psnr_db']:.2f} / {s[k]['mean_ssim']:.3f}" for k in s]
        loss = splats["train_l1"]
        print(
            f"| {name} | {' | '.join(cells)} | {loss['initial']:.3f} / {loss['refined']:.3f} "
            f"| {splats['gaussians']} | {splats['fit_seconds']} |"
        )


if __name__ == "__main__":
    main()
