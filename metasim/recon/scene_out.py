"""Stage 6: write the scene folder: `scene.yaml` in the project's scene schema, mesh files
next to it, and the background as a small MJCF (a visual-only scan mesh, textured with
the scan's colours).

Layout of OUT/: scene.yaml, background.xml, background.obj, background.png,
<object>.obj per object. The table top's collision is the (invisible) table fixture.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
from ruamel.yaml import YAML

from metasim.guards import replacing, write_atomic
from metasim.recon.camera import CV_TO_GL
from metasim.recon.objects import MeshData, ReconObject, write_obj
from metasim.recon.target import MASS
from metasim.recon.texture import bake_atlas
from metasim.rotations import mat_to_quat

BACKGROUND_XML = """<mujoco model="{name}_background">
  <asset>
    <texture name="scan" type="2d" file="background.png"/>
    <material name="scan" texture="scan" specular="0" shininess="0"/>
    <mesh name="scan" file="background.obj" inertia="shell"/>
  </asset>
  <worldbody>
    <geom name="scan" type="mesh" mesh="scan" material="scan" contype="0" conaffinity="0"
          mass="0"/>
  </worldbody>
</mujoco>
"""


def scene_name(out: Path) -> str:
    """A valid scene name from the output folder's name."""
    name = re.sub(r"[^A-Za-z0-9_\-]+", "_", out.resolve().name).strip("_")
    return name or "recon"


def write_meshes(out: Path, background: MeshData, objects: list[ReconObject]) -> None:
    """background.obj + background.png (texture atlas) + background.xml, <obj>.obj."""
    uv, atlas = bake_atlas(background)
    with replacing(out / "background.png") as tmp:
        atlas.save(tmp, format="PNG")
    write_obj(str(out / "background.obj"), background, uv)
    write_atomic(out / "background.xml", BACKGROUND_XML.format(name=scene_name(out)))
    for ob in objects:
        write_obj(str(out / f"{ob.name}.obj"), ob.mesh)


def camera_entry(name: str, pose: np.ndarray, fovy: float, width: int, height: int) -> dict:
    """A world camera of the scene at a scan pose (camera-to-scene, OpenCV)."""
    quat = mat_to_quat(pose[:3, :3] @ CV_TO_GL)
    return {
        "name": name,
        "pos": [round(float(v), 4) for v in pose[:3, 3]],
        "quat": [round(float(v), 6) for v in quat],
        "fovy": round(float(fovy), 3),
        "width": int(width),
        "height": int(height),
    }


def object_entry(ob: ReconObject, mass: float) -> dict[str, Any]:
    yaw = float(ob.yaw)
    return {
        "name": ob.name,
        "shape": "mesh",
        "mesh": f"{ob.name}.obj",
        "pos": [round(float(v), 4) for v in ob.centre],
        "quat": [round(math.cos(yaw / 2), 6), 0.0, 0.0, round(math.sin(yaw / 2), 6)],
        "mass": mass,
        "rgba": [round(float(c), 3) for c in ob.color] + [1.0],
    }


def scene_dict(
    name: str,
    description: str,
    table_centre: np.ndarray,
    table_half: np.ndarray,
    objects: list[ReconObject],
    camera: dict,
    target: str,
) -> dict[str, Any]:
    """The scene YAML's content: invisible table collision, the scan background, the
    objects, a scan camera and the task "lift <target>" (see `target.choose_target`)."""
    return {
        "name": name,
        "description": description,
        "fixtures": [
            {
                "type": "table",
                "name": "table",
                "pos": [round(float(v), 4) for v in table_centre],
                "height": 0.0,
                "half_size": [round(float(v), 4) for v in table_half],
                "rgba": [0.5, 0.5, 0.5, 0.0],
            }
        ],
        "objects": [
            {"name": "background", "shape": "mjcf", "mjcf": "background.xml", "free": False}
        ]
        + [object_entry(ob, mass=MASS) for ob in objects],
        "cameras": [
            camera,
            {"name": "wrist", "mount": "wrist", "fovy": 70, "width": 128, "height": 128},
        ],
        "task": {
            "instruction": f"pick up the {target}",
            "success": {"lifted": {"object": target, "height": 0.1}},
            "subgoals": [
                {"grasped": {"object": target}},
                {"lifted": {"object": target, "height": 0.05}},
            ],
            "time_limit": 8.0,
            "control_hz": 20,
            "expert": {"skill": "pick_lift", "object": target, "lift": 0.15},
        },
    }


def write_scene_yaml(path: Path, data: dict[str, Any], header: str) -> None:
    yaml = YAML()
    yaml.default_flow_style = None
    yaml.width = 100
    with replacing(path) as tmp, tmp.open("w") as fh:
        fh.write("".join(f"# {line}\n" for line in header.splitlines()))
        yaml.dump(data, fh)
