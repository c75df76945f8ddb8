"""The builder of LIBERO's fixture kind `type: site` (a box site, e.g. a goal region),
registered with the core's fixture builders (metasim.scene.fixtures). LIBERO's scenes are
otherwise parts of MJCF files (`type: mjcf`, robosuite's: metasim.robosuite.fixtures)."""

from __future__ import annotations

from pathlib import Path

import mujoco

from metasim.errors import MetasimInputError
from metasim.libero.kinds.models import SiteFixtureSpec
from metasim.scene.fixtures import builder


@builder(SiteFixtureSpec)
def _site(spec: mujoco.MjSpec, fx: SiteFixtureSpec, base_dir: Path) -> float | None:
    parent = spec.worldbody if fx.body is None else spec.body(fx.body)
    if parent is None:
        raise MetasimInputError(fx.name, [f"site parent body {fx.body!r} does not exist"])
    parent.add_site(
        name=fx.name,
        type=mujoco.mjtGeom.mjGEOM_BOX,
        pos=list(fx.pos),
        quat=list(fx.quat),
        size=list(fx.size),
        rgba=list(fx.rgba),
    )
    return None
