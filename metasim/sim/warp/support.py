"""What the MuJoCo Warp backend needs: a Warp device and a model MuJoCo Warp can put.

MuJoCo Warp runs on Warp's CPU device (kernels compiled by LLVM on first use, then cached
under ~/.cache/warp) as well as on CUDA. It simulates in float32, so its parity with
native MuJoCo (float64) is looser than MJX's (see tests/sim/test_warp_handler.py).
"""

from __future__ import annotations

from typing import Any

import mujoco

from metasim.sim.base import UnsupportedScene


def pick_device(device: str | None) -> str:
    """`device` if given, else CUDA when Warp sees a GPU, else "cpu"."""
    import warp as wp

    wp.init()
    if device is not None:
        return device
    return "cuda:0" if wp.get_cuda_device_count() > 0 else "cpu"


def put_model(model: mujoco.MjModel, name: str) -> Any:
    """The MuJoCo Warp model of `model`, or UnsupportedScene naming what it lacks."""
    import mujoco_warp as mjw

    try:
        return mjw.put_model(model)
    except NotImplementedError as exc:
        raise UnsupportedScene(f"scene {name!r}: MuJoCo Warp cannot simulate it: {exc}") from None


def per_world(name: str) -> bool:
    """Whether MuJoCo Warp's model field `name` takes a leading world axis ("*")."""
    from mujoco_warp._src import types

    hints = types.Option if name == "gravity" else types.Model
    shape: Any = getattr(hints.__annotations__.get(name), "shape", None)
    return bool(shape) and shape[0] == "*"


def default_capacity(model: mujoco.MjModel) -> tuple[int, int]:
    """Default `nconmax` and `njmax` per world: 16 and 8 times the contacts and constraint
    rows of the model's reference configuration (qpos0), at least 512 and 1,024."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return max(512, 16 * int(data.ncon)), max(1024, 8 * int(data.nefc))


def place_static_geoms(wm: Any, d: Any, num_envs: int, ngeom: int) -> None:
    """Recompute the world poses of geoms on world-welded bodies in every world (MuJoCo
    Warp sets them once in put_data and never again, see kernels.static_geom_poses)."""
    import warp as wp

    from metasim.sim.warp.kernels import static_geom_poses

    wp.launch(
        static_geom_poses,
        dim=(num_envs, ngeom),
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
        outputs=[d.geom_xpos, d.geom_xmat],
    )
