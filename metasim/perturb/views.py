"""A scene's world cameras and lights as the model rows they compile to, so that cells
of a grid that differ only in them (the camera and light axes) can share one compiled
model, each world given its cell's rows as per-env model edits
(`metasim.evaluate.cell_batches`).

`view_key` is a scene's plain data without those values (what must still be equal for
two cells to share a model); `view_data` is the part it leaves out; `view_rows` compiles
that part alone, with the compiler's own calls for cameras and lights, into
{(model field, camera or light name): row}. The rows are the ones the renderers read
for a fixed camera or light (pose, field of view, colours); the tracking references
MuJoCo derives from them (`cam_pos0`, `cam_mat0`, `cam_poscom0`, `light_pos0`,
`light_dir0`, `light_poscom0`) are read only by cameras and lights that track a body,
which world cameras and lights never do.
"""

from __future__ import annotations

import copy
from typing import Any, cast

import mujoco
import numpy as np

from metasim.scene.compile import _add_camera, _add_lights
from metasim.scene.schema import CameraSpec, LightSpec, Scene

# Axes that change only world cameras (pose, field of view) and lights.
VIEW_AXES = frozenset(
    {"camera_shift", "camera_look_shift", "camera_fovy", "light_intensity", "light_direction",
     "light_color"}
)  # fmt: skip
FOV_AXES = frozenset({"camera_fovy"})
CAMERA_FIELDS = ("cam_pos", "cam_quat", "cam_fovy")
LIGHT_FIELDS = ("light_pos", "light_dir", "light_diffuse", "light_ambient", "light_specular")
_POSE = ("pos", "look_at", "up", "quat")
_LIGHT = ("pos", "dir", "diffuse", "ambient", "specular")

Row = tuple[str, str]  # (model field, camera or light name)


def view_key(data: dict[str, Any], fovy: bool) -> dict[str, Any]:
    """`data` (a scene's `model_dump(mode="json")`) without its world cameras' poses (and
    fields of view, with `fovy`) and its lights' positions, directions and colours."""
    out = copy.deepcopy(data)
    drop = _POSE + (("fovy",) if fovy else ())
    for cam in out.get("cameras", []):
        if cam.get("mount", "world") == "world":
            for key in drop:
                cam.pop(key, None)
    for light in out.get("lights", []):
        for key in _LIGHT:
            light.pop(key, None)
    return out


def view_data(scene: Scene) -> dict[str, Any]:
    """The scene's world cameras and lights, as plain data (what `view_rows` compiles)."""
    return {
        "cameras": [c.model_dump(mode="json") for c in scene.cameras if c.mount == "world"],
        "lights": [li.model_dump(mode="json") for li in scene.lights],
    }


def view_rows(data: dict[str, Any]) -> dict[Row, np.ndarray]:
    """{(field, name): row} of the cameras and lights of `data` (`view_data`), compiled
    alone by the scene compiler's own camera and light calls (a scene without lights
    gets the compiler's default light, as the scene would)."""
    cams = [CameraSpec.model_validate(c) for c in data["cameras"]]
    lights = [LightSpec.model_validate(li) for li in data["lights"]]
    spec = mujoco.MjSpec()
    for cam in cams:  # world cameras: the robot is not read
        _add_camera(spec, cam, cast(Any, None))
    _add_lights(spec, Scene.model_construct(lights=lights))
    model = spec.compile()
    out: dict[Row, np.ndarray] = {}
    for i in range(model.ncam):
        for field in CAMERA_FIELDS:
            out[(field, model.camera(i).name)] = np.array(getattr(model, field)[i])
    for i in range(model.nlight):
        for field in LIGHT_FIELDS:
            out[(field, model.light(i).name)] = np.array(getattr(model, field)[i])
    return out


def row_index(model: mujoco.MjModel, row: Row) -> int:
    """The index in `model` of the camera or light a row of `view_rows` belongs to."""
    field, name = row
    kind = mujoco.mjtObj.mjOBJ_CAMERA if field.startswith("cam_") else mujoco.mjtObj.mjOBJ_LIGHT
    index = mujoco.mj_name2id(model, kind, name)
    if index < 0:
        raise ValueError(f"the model has no {'camera' if field.startswith('cam_') else 'light'} "
                         f"{name!r}")  # fmt: skip
    return int(index)


__all__ = [
    "CAMERA_FIELDS",
    "FOV_AXES",
    "LIGHT_FIELDS",
    "VIEW_AXES",
    "row_index",
    "view_data",
    "view_key",
    "view_rows",
]
