"""Per-world model fields on a MuJoCo Warp model: what a per-env model edit becomes (the
warp backend's physics perturbations and fixture poses, a camera rig's per-world lights
and colours). MuJoCo Warp reads a model field with a leading world axis per world."""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np
import warp as wp

from metasim.sim.warp.kernels import static_geom_poses

# model fields that place geoms on world-welded bodies (see place_static_geoms)
STATIC_POSE_FIELDS = frozenset({"body_pos", "body_quat", "geom_pos", "geom_quat"})


def per_world(name: str) -> bool:
    """Whether MuJoCo Warp's model field `name` takes a leading world axis ("*")."""
    from mujoco_warp._src import types

    hints = types.Option if name == "gravity" else types.Model
    shape: Any = getattr(hints.__annotations__.get(name), "shape", None)
    return bool(shape) and shape[0] == "*"


def set_world_field(wm: Any, field: str, index: int, values: np.ndarray, nworld: int) -> bool:
    """Set row `index` of model field `field` (or `gravity`) of every world to `values`
    (nworld, ...) on the MuJoCo Warp model `wm` (in the current Warp device scope).
    False: MuJoCo Warp reads that field once for every world (nothing set)."""
    target = wm.opt if field == "gravity" else wm
    current = getattr(target, field, None)
    if not isinstance(current, wp.array) or not per_world(field):
        return False
    host = np.asarray(current.numpy())
    if host.shape[0] != nworld:
        host = np.repeat(host[:1], nworld, axis=0)
    if field == "gravity":
        host[:] = values.reshape(host.shape)
    else:
        host[:, index] = values.reshape(host[:, index].shape)
    setattr(target, field, wp.array(host, dtype=current.dtype, device=current.device))
    return True


def place_static_geoms(model: mujoco.MjModel, wm: Any, wd: Any) -> None:
    """Recompute the world poses of geoms on world-welded bodies in every world (MuJoCo
    Warp sets them once in put_data and never again, see kernels.static_geom_poses)."""
    wp.launch(
        static_geom_poses,
        dim=(wd.nworld, model.ngeom),
        inputs=[
            wm.body_parentid,
            wm.body_rootid,
            wm.body_weldid,
            wm.body_mocapid,
            wm.body_pos,
            wm.body_quat,
            wm.geom_bodyid,
            wm.geom_pos,
            wm.geom_quat,
        ],
        outputs=[wd.geom_xpos, wd.geom_xmat],
    )
