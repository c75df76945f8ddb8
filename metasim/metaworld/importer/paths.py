"""Where Meta-World's files are: the package lives only in the reference venv
(`.cache/metaworld-ref`, metaworld==3.1.1 on MuJoCo 3.3.0), whose `metaworld/assets`
folder metasim reads by path (nothing is copied into the repository or imported).
`METASIM_METAWORLD_ASSETS` points elsewhere (a folder laid out as `metaworld/assets`).

Facts read from the package once (`python -m metasim.metaworld.reference.sweep facts`)
ship as `metasim/metaworld/facts.json`: per task (`reach-v3`, ...) its XML, the length
of its random vector, the mocap box, the hand's start.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from metasim.errors import MetasimInputError

FACTS = Path(__file__).resolve().parent.parent / "facts.json"
INSTALL_HINT = (
    "Meta-World's files come from the reference venv: run "
    "`python -m metasim.metaworld.reference.simulator` once (it builds .cache/metaworld-ref "
    "from PyPI), or set METASIM_METAWORLD_ASSETS to a metaworld/assets folder"
)


@functools.cache
def facts() -> dict[str, dict[str, Any]]:
    """The package's per-task facts, keyed by env name (`pick-place-v3`)."""
    return dict(json.loads(FACTS.read_text()))


def task_names() -> list[str]:
    """The 50 v3 env names in MT50's order."""
    return list(facts())


def task_facts(task: str) -> dict[str, Any]:
    """Facts of one env name, or an input error listing the known names."""
    known = facts()
    if task not in known:
        raise MetasimInputError(
            "metaworld", [f"unknown task {task!r}; expected one of {sorted(known)}"]
        )
    return known[task]


@functools.cache
def assets_root() -> Path:
    """The package's `metaworld/assets` folder (the reference venv's, built if missing)."""
    env = os.environ.get("METASIM_METAWORLD_ASSETS")
    if env:
        root = Path(env)
    else:
        from metasim.metaworld.reference.simulator import VENV, ensure_venv

        try:
            ensure_venv()
        except Exception as exc:  # pip/venv failures: say how to get the files
            raise MetasimInputError(
                "metaworld", [f"no reference venv: {exc}"], hint=INSTALL_HINT
            ) from None
        found = sorted(VENV.glob("lib/python*/site-packages/metaworld/assets"))
        root = found[0] if found else VENV / "metaworld" / "assets"
    if not (root / "sawyer_xyz").is_dir():
        raise MetasimInputError(
            "metaworld", [f"{root} has no sawyer_xyz/ task XMLs"], hint=INSTALL_HINT
        )
    return root.resolve()


def task_xml(task: str) -> Path:
    """The task's own XML file (`sawyer_xyz/<file>.xml` inside the package's assets)."""
    rel = str(task_facts(task)["xml"]).removeprefix("assets/")
    return assets_root() / rel
