"""What the MuJoCo Warp backend needs: a Warp device and a model MuJoCo Warp can put.

MuJoCo Warp runs on Warp's CPU device (kernels compiled by LLVM on first use, then cached
under ~/.cache/warp) as well as on CUDA. It simulates in float32, so its parity with
native MuJoCo (float64) is looser than MJX's (see tests/sim/test_warp_handler.py).
"""

from __future__ import annotations

from typing import Any

import mujoco

from metasim.sim.state import UnsupportedScene


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
    from mujoco_warp._src.types import DisableBit

    try:
        wm = mjw.put_model(model)
    except NotImplementedError as exc:
        raise UnsupportedScene(f"scene {name!r}: MuJoCo Warp cannot simulate it: {exc}") from None
    # Box-box contacts as native MuJoCo makes them: MuJoCo Warp collides box pairs with
    # its GJK/EPA multi-contact path unless this bit is set, and then with its primitive
    # box-box (native's mjc_BoxBox). The bit changes nothing else in MuJoCo Warp (its
    # native CCD switch is ignored otherwise). Control experiment: LIBERO tasks whose
    # init state drops a bowl onto boxes parted from native by 9-64 mm with the default
    # (17 of 35 box pairs got 2 contacts where native has 4), within 0.2 mm with this.
    wm.opt.disableflags |= int(DisableBit.NATIVECCD)
    return wm


def capacity_overflows() -> int:
    """MuJoCo Warp's overflow flags that drop contacts or constraint rows (not the
    solver's iteration limit, which native MuJoCo has too)."""
    import mujoco_warp as mjw

    o = mjw.OverflowType
    return int(
        o.NEFC
        | o.NJMAX_NNZ
        | o.BROADPHASE
        | o.NARROWPHASE
        | o.CCD
        | o.HFIELD
        | o.NVMAX
        | o.EPA_HORIZON
    )


def check_split_step(model: mujoco.MjModel) -> None:
    """A scene whose weld rows are rewritten between step1 and step2 (`physics.
    equality_jdotv: false`) needs an integrator that splits there."""
    split = {
        int(mujoco.mjtIntegrator.mjINT_EULER),
        int(mujoco.mjtIntegrator.mjINT_IMPLICIT),
        int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST),
    }
    if int(model.opt.integrator) not in split:
        raise UnsupportedScene(
            "physics.equality_jdotv: false rewrites weld rows between step1 and step2 "
            "on the warp backend: the Euler and implicit integrators only (the scene's "
            f"is {mujoco.mjtIntegrator(model.opt.integrator).name})"
        )


def default_capacity(model: mujoco.MjModel) -> tuple[int, int]:
    """Default `nconmax` and `njmax` per world: 16 and 8 times the contacts and constraint
    rows of the model's reference configuration (qpos0), at least 512 and 1,024."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return max(512, 16 * int(data.ncon)), max(1024, 8 * int(data.nefc))


def rewrite_weld_aref(wm: Any, d: Any, num_envs: int, njmax: int) -> None:
    """Between step1 and step2: every world's weld and connect rows' reference
    acceleration without the J̇v term (`kernels.legacy_equality_aref`)."""
    import warp as wp

    from metasim.sim.warp.kernels import legacy_equality_aref

    wp.launch(
        legacy_equality_aref,
        dim=(num_envs, njmax),
        inputs=[
            wm.opt.timestep,
            int(wm.opt.disableflags),
            wm.eq_type,
            wm.eq_solref,
            wm.eq_solimp,
            d.nefc,
            d.efc.type,
            d.efc.id,
            d.efc.pos,
            d.efc.vel,
        ],
        outputs=[d.efc.aref],
    )
