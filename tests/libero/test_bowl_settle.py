"""libero_spatial/5's bowl in metasim (MuJoCo 4.0) and in LIBERO (robosuite 1.4, MuJoCo 3.17):
issue 44's physics miss. The init states leave the bowl about 11 cm over the ramekin; since
MuJoCo 3.4's box-box change it does not seat there but tips off and leans against it (the
bowl and the ramekin are sets of boxes; huggingface/lerobot#4390). These tests pin the
control experiment of docs/log/libero.md (2026-11-29): from LIBERO's own recorded substeps,
metasim's compiled model steps as LIBERO does, through the drop, the box-box landing and
the rest, so the misses of the replays are not a physics difference between the two."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from metasim.libero.checks.parity import place_fixtures, prepare
from metasim.libero.reference.simulator import ReferenceSim
from metasim.scene.compile import ROBOT_PREFIX

pytestmark = pytest.mark.reference

SUITE, TASK, INIT = "libero_spatial", 5, 25
BOWL = "akita_black_bowl_1"
RAMEKIN = "glazed_rim_porcelain_ramekin_1"
STEPS = 24  # 600 substeps: the drop (~step 8), the landing and the lean (~step 18), at rest


def _tilt_deg(quat: np.ndarray) -> float:
    """Angle between a body's z axis and the world's (quaternion w x y z)."""
    w, x, y, z = quat
    return float(np.degrees(2 * np.arccos(min(1.0, np.sqrt(w * w + z * z)))))


def test_metasim_steps_libero_spatial_5s_bowl_drop_as_libero(ref: ReferenceSim) -> None:
    info = ref.load(SUITE, TASK, size=64, cameras=False)
    state, _ = ref.reset(init=INIT, seed=0)
    hold = np.tile([0.0, 0, 0, 0, 0, 0, -1.0], (STEPS, 1))  # the settle action
    rec = ref.record(hold)
    end, _ = ref.state()
    q, v, ctrl = rec["qpos"], rec["qvel"], rec["ctrl"]
    assert len(q) == STEPS * 25

    sim = prepare(SUITE, TASK)
    model = sim.compiled.model
    place_fixtures(model, info["fixtures"], info["bodies"], state)
    qi, vi = sim.mapping.qpos_index, sim.mapping.qvel_index
    exported = mujoco.MjModel.from_xml_string(ref.xml())  # LIBERO's actuator order
    ref_act = [
        model.actuator(ROBOT_PREFIX + exported.actuator(a).name).id for a in range(exported.nu)
    ]
    data = mujoco.MjData(model)
    worst = 0.0
    for k in range(len(q) - 1):  # one substep from each of LIBERO's recorded states
        data.qpos[qi], data.qvel[vi] = q[k], v[k]
        data.ctrl[ref_act] = ctrl[k]
        mujoco.mj_step(model, data)
        worst = max(worst, float(np.abs(data.qpos[qi] - q[k + 1]).max()))
    assert worst < 1e-6, worst  # measured 2.2e-7 (median 1e-13) on the replays of inits 25, 33

    # free run with LIBERO's ctrl: the bowl lands and leans where LIBERO's does
    data = mujoco.MjData(model)
    data.qpos[qi], data.qvel[vi] = q[0], v[0]
    for k in range(len(q)):
        data.ctrl[ref_act] = ctrl[k]
        mujoco.mj_step(model, data)
    bowl = info["bodies"].index(info["objects"][BOWL])
    ramekin = info["bodies"].index(info["objects"][RAMEKIN])
    ours = data.xpos[model.body(BOWL).id]
    assert np.abs(ours - end["body_xpos"][bowl]).max() < 1e-6
    lean = _tilt_deg(end["body_xquat"][bowl])
    assert lean > 30.0, lean  # tipped off the ramekin (measured 51 deg in both)
    assert _tilt_deg(data.xquat[model.body(BOWL).id]) == pytest.approx(lean, abs=1e-3)
    off_axis = np.linalg.norm(end["body_xpos"][bowl][:2] - end["body_xpos"][ramekin][:2])
    assert off_axis > 0.04, off_axis  # not seated: 56 mm off the ramekin's axis
