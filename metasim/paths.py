"""Where the project's data folders are: assets/, scenes/, policies/, perturbations/, eval/.

In a checkout (an editable install, the README's set-up) they live at the repository root
beside the package; a wheel (`pip install .`, not editable) carries them inside the
package as `metasim/_data/` (setup.py's build hook). METASIM_ROOT names another root.
Generated files of a checkout's tools (reference venvs, the peer layer) live in its
`.cache/`; an installed package keeps them under `cache_dir()` (`project_cache`).
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
DATA_FOLDERS = ("assets", "scenes", "policies", "perturbations", "eval")


def _root() -> Path:
    if os.environ.get("METASIM_ROOT"):
        return Path(os.environ["METASIM_ROOT"])
    checkout = _PACKAGE.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "scenes").is_dir():
        return checkout
    return _PACKAGE / "_data"


ROOT = _root()
INSTALLED = ROOT == _PACKAGE / "_data"
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


def project_cache(name: str) -> Path:
    """The folder of one generated tool (a reference venv, the peer layer): the
    checkout's `.cache/<name>`, or `cache_dir()/<name>` for an installed package."""
    return (cache_dir() if INSTALLED else ROOT / ".cache") / name
