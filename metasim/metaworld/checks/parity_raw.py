"""The control run of a Meta-World parity check: the package's own task XML compiled raw in
metasim's MuJoCo 4 (`mujoco.MjModel.from_xml_path` on the reference venv's asset file, no
import, no metasim scene), the package's weld data and the variation's reset state
applied, and the mocap driven exactly as the package's `step` drives it:

    mocap_pos = clip(mocap_pos + clip(a[:3], -1, 1) * action_scale, mocap_low, mocap_high)
    mocap_quat = (1, 0, 1, 0); ctrl = (a[3], -a[3])
    mj_step x frame_skip (5); mj_rnePostConstraint; mj_forward

with each mj_step split as mj_step1, the equality rows' reference acceleration without
MuJoCo 3.7's J̇v term, mj_step2 (`legacy_equality_aref`, as the imported scene's
`physics.equality_jdotv: false` steps it; `RawRun(jdotv=True)` steps as plain 4.0).
Same MuJoCo as metasim, same file and driving as the package: when this run matches
metasim's and both part from the reference, the MuJoCo version (3.3.0 vs 4.0) parts them,
not metasim's import; when metasim parts from this run, the import (or metasim's driving)
does.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from metasim.metaworld.importer import paths
from metasim.metaworld.importer.model import WELD_DATA
from metasim.metaworld.reference.init_states import InitStates
from metasim.reference import parity as kit
from metasim.sim.mujoco.legacy import legacy_equality_aref

MOCAP_QUAT = (1.0, 0.0, 1.0, 0.0)  # what the package writes on every step (unnormalised)
ROBOT_XML = "objects/assets/xyz_base.xml"  # under the package's assets/
ACTION_SCALE = 0.01  # every v3 env (docs/metaworld.md)
FRAME_SKIP = 5


@dataclass
class Track:
    """One rollout's trajectory, rows 0..T (0 = the reset state): tcp_center (T+1, 3),
    hand (T+1, 3), objects (T+1, F, 3) (free joints' positions; their names `free`,
    "" when unnamed, joint ids `free_ids`, body names `free_bodies`), qpos (T+1, nq);
    per step (T,): `robot_contact` (a robot geom touching a non-robot geom after the
    step), `touched` (T, F) bool: touched so far at any substep, directly by the robot
    or through a chain of touched objects."""

    tcp_center: np.ndarray
    hand: np.ndarray
    objects: np.ndarray
    qpos: np.ndarray
    free: list[str]
    free_ids: list[int]
    free_bodies: list[str]
    robot_contact: np.ndarray
    touched: np.ndarray


def raw_model(task: str, states: InitStates, k: int) -> mujoco.MjModel:
    """The task XML compiled by metasim's MuJoCo, with the weld data the package's
    constructor writes and every model row the package's reset wrote for variation k."""
    return apply_reset_rows(mujoco.MjModel.from_xml_path(str(paths.task_xml(task))), states, k)


def apply_reset_rows(m: mujoco.MjModel, states: InitStates, k: int) -> mujoco.MjModel:
    """Write into `m` (a compile of the task XML, the package's names) the weld data the
    package's constructor writes and the model rows variation k's reset writes."""
    for i in range(m.neq):
        if m.eq_type[i] == mujoco.mjtEq.mjEQ_WELD:
            m.eq_data[i, : len(WELD_DATA)] = WELD_DATA
    for field, change in states.model.items():
        if field == "eq_data":
            continue  # the constructor's weld data, written above
        arr = getattr(m, field)
        kind = _OBJ[field.split("_", 1)[0]]
        for j, name in enumerate(change.names):
            row = int(change.rows[j]) if name.startswith("#") else _id(m, kind, name)
            value = np.asarray(change.values[k, j]).reshape(-1)
            arr[row, : value.size] = value
    return m


_OBJ = {
    "body": mujoco.mjtObj.mjOBJ_BODY,
    "site": mujoco.mjtObj.mjOBJ_SITE,
    "geom": mujoco.mjtObj.mjOBJ_GEOM,
}


def _id(m: mujoco.MjModel, kind: mujoco.mjtObj, name: str) -> int:
    out = mujoco.mj_name2id(m, kind, name)
    if out < 0:
        raise KeyError(f"no {kind.name} {name!r} in the raw model")
    return int(out)


def robot_bodies(m: mujoco.MjModel) -> np.ndarray:
    """(nbody,) bool: the bodies of the Sawyer's file xyz_base.xml (by name)."""
    import xml.etree.ElementTree as ET

    tree = ET.parse(paths.assets_root() / ROBOT_XML)
    names = {b.get("name") for b in tree.iter("body") if b.get("name")}
    return np.array([m.body(b).name in names for b in range(m.nbody)])


class RawRun:
    """The raw-XML control (module doc) of one (task, variation): `reset()` then `step(a)`."""

    def __init__(self, task: str, states: InitStates, k: int, jdotv: bool = False) -> None:
        facts = paths.task_facts(task)
        self.jdotv = jdotv
        self.model = m = raw_model(task, states, k)
        self.data = mujoco.MjData(m)
        self.states, self.k = states, k
        self.scale = float(facts.get("action_scale", ACTION_SCALE))
        self.frame_skip = int(facts.get("frame_skip", FRAME_SKIP))
        self.low = np.asarray(facts["mocap_low"], dtype=np.float64)
        self.high = np.asarray(facts["mocap_high"], dtype=np.float64)
        self.robot = robot_bodies(m)
        self.robot_geom = self.robot[m.geom_bodyid]
        free = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
        self.free_ids = free
        self.free_names = [m.joint(j).name for j in free]
        self.free_adr = np.array([m.jnt_qposadr[j] for j in free], dtype=int)
        self.free_body = np.array([m.jnt_bodyid[j] for j in free], dtype=int)
        self.touched = np.zeros(len(free), dtype=bool)

    def reset(self) -> None:
        """The variation's reset state (qpos, qvel, mocap), then mj_forward (as the
        package's `set_state` ends)."""
        m, d, s, k = self.model, self.data, self.states, self.k
        mujoco.mj_resetData(m, d)
        d.qpos[:] = s.arrays["qpos"][k]
        d.qvel[:] = s.arrays["qvel"][k]
        d.mocap_pos[:] = np.asarray(s.arrays["mocap_pos"][k]).reshape(-1, 3)
        d.mocap_quat[:] = np.asarray(s.arrays["mocap_quat"][k]).reshape(-1, 4)
        d.ctrl[:] = (-1.0, 1.0)  # as `_reset_hand` leaves it
        mujoco.mj_forward(m, d)
        self.touched[:] = False

    def step(self, action: np.ndarray) -> None:
        """One env step as the package's `step` (module doc), substep by substep (the same
        arithmetic as mj_step(nstep=5)) to see each substep's contacts."""
        m, d = self.model, self.data
        a = np.asarray(action, dtype=np.float64)
        delta = np.clip(a[:3], -1.0, 1.0) * self.scale
        d.mocap_pos[0] = np.clip(d.mocap_pos[0] + delta, self.low, self.high)
        d.mocap_quat[0] = MOCAP_QUAT
        d.ctrl[:] = (a[3], -a[3])
        for _ in range(self.frame_skip):
            if self.jdotv:
                mujoco.mj_step(m, d)
            else:
                mujoco.mj_step1(m, d)
                legacy_equality_aref(m, d)
                mujoco.mj_step2(m, d)
            self._spread_touch()
        mujoco.mj_rnePostConstraint(m, d)
        mujoco.mj_forward(m, d)

    def _spread_touch(self) -> None:
        """Mark objects touched by the robot or by a touched object in the contacts of
        the substep just taken."""
        hot = set(np.flatnonzero(self.robot)) | set(self.free_body[self.touched])
        kit.spread_touch(self.model.geom_bodyid[self.data.contact.geom], hot)
        self.touched |= np.isin(self.free_body, list(hot))

    def robot_contact(self) -> bool:
        """Whether a robot geom touches a non-robot geom in the current contacts."""
        return len(kit.robot_pairs(self.robot_geom, self.data.contact.geom)) > 0

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(tcp_center (3,), hand (3,), objects (F, 3), qpos (nq,)) of the current state."""
        d = self.data
        tcp = (d.site("rightEndEffector").xpos + d.site("leftEndEffector").xpos) / 2.0
        objects = np.array([d.qpos[a : a + 3] for a in self.free_adr]).reshape(-1, 3)
        return tcp.copy(), d.body("hand").xpos.copy(), objects, d.qpos.copy()


def run_raw(task: str, states: InitStates, k: int, actions: np.ndarray) -> Track:
    """Roll the raw-XML control over `actions` (T, 4) from variation k's reset state."""
    run = RawRun(task, states, k)
    run.reset()
    snaps = [run.snapshot()]
    contact, touched = [], []
    for a in actions:
        run.step(a)
        snaps.append(run.snapshot())
        contact.append(run.robot_contact())
        touched.append(run.touched.copy())
    return Track(
        tcp_center=np.array([s[0] for s in snaps]),
        hand=np.array([s[1] for s in snaps]),
        objects=np.array([s[2] for s in snaps]),
        qpos=np.array([s[3] for s in snaps]),
        free=run.free_names,
        free_ids=run.free_ids,
        free_bodies=[run.model.body(b).name for b in run.free_body],
        robot_contact=np.array(contact, dtype=bool),
        touched=np.array(touched).reshape(len(actions), len(run.free_names)),
    )
