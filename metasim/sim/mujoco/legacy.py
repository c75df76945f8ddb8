"""MuJoCo < 3.7's equality constraint rows, for scenes that ask for them
(`physics.equality_jdotv: false`)."""

from __future__ import annotations

import mujoco

from metasim.scene.compile import CompiledScene


def legacy_equality_aref(m: mujoco.MjModel, d: mujoco.MjData) -> None:
    """Between mj_step1 and mj_step2: the equality rows' reference acceleration as MuJoCo
    < 3.7 computed it, aref = -B*vel - K*I*(pos - margin), without the J̇v term 3.7.0 added
    for connect and weld rows (`mj_Jdotv`; `physics.equality_jdotv: false`). Equality
    rows come first among the constraint rows; for the other equality kinds both are the
    same. On the package's reach-v3 XML this makes MuJoCo 4.0 step as 3.3.0 to 1e-15 m."""
    ne = d.ne
    if ne:
        k = d.efc_KBIP[:ne]
        d.efc_aref[:ne] = -k[:, 1] * d.efc_vel[:ne] - k[:, 0] * k[:, 2] * (
            d.efc_pos[:ne] - d.efc_margin[:ne]
        )


def legacy_aref_needed(compiled: CompiledScene) -> bool:
    """Whether the scene asks for `legacy_equality_aref` (`physics.equality_jdotv: false`)
    and its model has a constraint whose rows MuJoCo >= 3.7 gives a J̇v term (connect,
    weld)."""
    jdotv_kinds = {int(mujoco.mjtEq.mjEQ_CONNECT), int(mujoco.mjtEq.mjEQ_WELD)}
    has = bool(jdotv_kinds & set(compiled.model.eq_type.tolist()))
    return has and not compiled.scene.physics.equality_jdotv
