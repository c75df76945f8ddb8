"""Where the project's data folders are: assets/, scenes/, policies/, perturbations/, eval/.

They live at the repository root beside the package (an editable install); set
METASIM_ROOT to use another root.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(os.environ.get("METASIM_ROOT", Path(__file__).resolve().parents[1]))
ASSETS = ROOT / "assets"
SCENES = ROOT / "scenes"
POLICIES = ROOT / "policies"
PERTURBATIONS = ROOT / "perturbations"
EVAL = ROOT / "eval"


def cache_dir() -> Path:
    """Where generated files live (robot MJCFs cut from benchmark packages, recorded
    initial states): $METASIM_CACHE or ~/.cache/metasim."""
    root = os.environ.get("METASIM_CACHE") or Path.home() / ".cache" / "metasim"
    return Path(root)
