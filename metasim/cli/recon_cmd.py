"""`metasim recon INPUT --out scenes/NAME/`: a phone scan to a scene (in progress)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(verbs: Any) -> None:
    rec = verbs.add_parser("recon", help="reconstruct a scene from an RGB-D capture or a video")
    rec.add_argument("input", help="an RGB-D capture folder, a video file or an image folder")
    rec.add_argument("--out", required=True, help="output folder, e.g. scenes/my_table/")


def run_recon_cli(args: argparse.Namespace) -> int:
    raise NotImplementedError("metasim recon is being built (issue 6)")
