"""The model-diff facts of every model robosuite builds, robosuite's tasks' and LIBERO's
alike: the geom names robosuite generates (`GENERATED_GEOM`), its renderer's ways of hiding
what it does not draw (`RENDER`) and MuJoCo 3.17's compiled defaults (`VERSIONS`), with
their shared notes (`NOTES`). The kit's engine (`metasim.reference.modeldiff`) reads them;
robosuite's model diff lists them with its own (`checks/modeldiff.py`), LIBERO's with its
own (`metasim.libero.checks.modeldiff_listed`)."""

from __future__ import annotations

import re

from metasim.reference.modeldiff import Listed

# robosuite names every unnamed geom of a part `<prefix>g<k>` (`<prefix>g<k>_vis` when
# visual-only), k counting the part's unnamed geoms in file order.
GENERATED_GEOM = re.compile(r"(^|_)g\d+(_vis)?$")
HIDDEN = "hidden"
RENDER: tuple[Listed, ...] = (
    Listed("geom_group", "*", "render: hide_collision_geoms moves collision geoms (group 0) "
           "to group 3, which MuJoCo's default render does not draw; robosuite's renderer "
           "hides group 0 itself", metasim=[3.0], reference=[0.0]),
    Listed("site_group", "*", "render: hide_sites moves every site to group 3; robosuite "
           "hides sites by their alpha (site_rgba)", metasim=[3.0]),
    Listed("site_rgba", "*", "robosuite hides sites by negating their alpha; metasim keeps "
           "the file's colour and hides sites by group", same_magnitude=True),
    Listed("geom_rgba", "*", HIDDEN, collision=True),
)  # fmt: skip
VERSIONS: tuple[Listed, ...] = (
    Listed("vis.headlight.active", "model", "each version's compiled default for an MJCF "
           "without <headlight active>: MuJoCo 4 writes 2, 3.17 writes 1; the headlight is "
           "on in both", metasim=[2.0], reference=[1.0]),
    Listed("vis.quality.shadowsize", "model", "compile_scene renders 1024-texel shadow maps "
           "(4096 costs several times the frame time on software GL)", metasim=[1024.0]),
)  # fmt: skip
NOTES = {
    HIDDEN: "the colour of a collision geom: robosuite recolours those of robots, "
    "grippers, mounts and tables (contact_geom_rgba); collision geoms are drawn by neither "
    "renderer (group 0 hidden) and a colour has no physics",
}


def generated(kind: str, name: str) -> bool:
    """Whether a reference geom name is one robosuite generated (it stands for no name)."""
    return kind == "geom" and bool(GENERATED_GEOM.search(name))
