"""Replays the reference's recorded Meta-World states in metasim's MuJoCo (4.x) and
evaluates metasim's success and observation on them (helpers of
test_metaworld_semantics.py).

The reference side is `metasim/metaworld/reference/semantics_probe.py`, run in the
reference venv: per episode the task XML's path, the model fields its reset wrote, the
target, and per step qpos, qvel, mocap, ctrl, the package's observation and
info["success"]. Here: compile the same XML (with the Sawyer's elements renamed
`robot/...`, the naming contract of metasim's importer, or as is), write the same model
fields, and per recorded step set the state and mj_forward.
"""

from __future__ import annotations

import copy
import json
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import mujoco
import numpy as np

from metasim.metaworld.obs import frame, observation
from metasim.metaworld.state import MwState, pads_touching
from metasim.metaworld.success import success
from metasim.sim.base import Kinematics

PROBE = Path(__file__).parents[2] / "metasim/metaworld/reference/semantics_probe.py"
KINDS = ("body", "joint", "geom", "site", "camera")


def run_probe(python: Path, out: Path, tasks: list[str] | str, episodes: int, steps: int) -> None:
    names = tasks if isinstance(tasks, str) else ",".join(tasks)
    cmd = [str(python), str(PROBE), str(out), "--tasks", names]
    cmd += ["--episodes", str(episodes), "--steps", str(steps)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=1800)


def load_probe(out: Path) -> tuple[list[dict], dict[str, np.ndarray]]:
    metas = json.loads((out / "probe.json").read_text())
    with np.load(out / "probe.npz") as npz:
        return metas, {k: npz[k] for k in npz.files}


@cache
def sawyer_names(xml: str) -> frozenset[str]:
    """Names of the elements of the package's `objects/assets/xyz_base.xml` (the Sawyer),
    next to the task XML `xml`."""
    base = Path(xml).parents[1] / "objects/assets/xyz_base.xml"
    root = ET.parse(base).getroot()
    return frozenset(e.get("name", "") for e in root.iter() if e.tag in KINDS) - {""}


@cache
def compiled(xml: str, prefix: str) -> mujoco.MjModel:
    """The task XML compiled by metasim's MuJoCo; with `prefix`, the Sawyer's elements
    (and the weld's and gripper actuators' references to them) renamed prefix + name."""
    spec = mujoco.MjSpec.from_file(xml)
    robot = sawyer_names(xml)
    if prefix:
        for kind in KINDS:
            for el in getattr(spec, "bodies" if kind == "body" else f"{kind}s"):
                if el.name in robot:
                    el.name = prefix + el.name
        for eq in spec.equalities:
            eq.name1, eq.name2 = (prefix + n if n in robot else n for n in (eq.name1, eq.name2))
        for act in spec.actuators:
            act.target = prefix + act.target if act.target in robot else act.target
    return spec.compile()


WHOLE = ("body_pos", "body_quat", "site_pos", "site_quat", "geom_pos", "geom_quat")


def compile_gaps(model: mujoco.MjModel, meta: dict, arrays: dict) -> dict[str, float]:
    """Per field of WHOLE, the largest |metasim's compiled value - the reference's| (the
    reference's after its reset, whose edits are written into `model` first)."""
    key = f"{meta['task']}/{meta['episode']}/model_"
    return {f: float(np.abs(getattr(model, f) - arrays[key + f]).max()) for f in WHOLE}


def episode_model(meta: dict, prefix: str, arrays: dict | None = None) -> mujoco.MjModel:
    """A copy of the task's model with the reference reset's model edits written in and,
    with `arrays`, the reference model's body/site/geom frames (WHOLE) too."""
    model = copy.copy(compiled(meta["xml"], prefix))
    robot = sawyer_names(meta["xml"])
    for edit in meta["edits"]:
        name = edit["name"]
        kind = {"eq": mujoco.mjtObj.mjOBJ_EQUALITY}.get(edit["field"][:2])
        obj = kind or getattr(mujoco.mjtObj, f"mjOBJ_{edit['field'].split('_')[0].upper()}")
        if name.startswith("#"):
            i = int(name[1:])
        else:
            i = mujoco.mj_name2id(model, obj, prefix + name if name in robot else name)
        assert i >= 0, f"no element {name!r} for {edit['field']}"
        value = np.asarray(edit["value"])
        getattr(model, edit["field"])[i, : len(value)] = value  # MuJoCo 4's eq_data: 12 wide
    key = f"{meta['task']}/{meta['episode']}/model_"
    for field in WHOLE if arrays is not None else ():
        getattr(model, field)[:] = arrays[key + field]
    return model


@dataclass
class Replay:
    """One episode replayed: the reference's and metasim's success (T,) and observations
    (T, 39) of the steps (the reset row apart: the package does not evaluate its success,
    and its observation can be read before the reset's last kinematics, `reset_gap`);
    the step after the reset is given the package's reset frame as its previous frame.
    reset_gap: max |metasim's reset observation - the package's|; compile_gap: per model
    field, max |metasim's compiled value - the reference's| (see `compile_gaps`)."""

    task: str
    ref_success: np.ndarray
    success: np.ndarray
    ref_obs: np.ndarray
    obs: np.ndarray
    reset_gap: float
    compile_gap: dict[str, float]


def kinematics(model: mujoco.MjModel, rows: dict[str, np.ndarray], touch: str | None, prefix: str):
    """Kinematics (T, ...) of the recorded rows (each set, then mj_forward), and per row
    whether the pads touch geom `touch` (None: not computed)."""
    data = mujoco.MjData(model)
    out: dict[str, list[np.ndarray]] = {k: [] for k in ("xpos", "xquat", "site_xpos", "site_xmat")}
    touching = []
    for t in range(len(rows["qpos"])):
        for field in ("qpos", "qvel", "mocap_pos", "mocap_quat", "ctrl", "qacc_warmstart"):
            getattr(data, field)[:] = rows[field][t]
        mujoco.mj_forward(model, data)
        for k, v in out.items():
            v.append(getattr(data, k).copy())
        touching.append(touch is not None and pads_touching(model, data, touch, prefix))
    n = len(rows["qpos"])
    kin = Kinematics(
        rows["qpos"],
        rows["qvel"],
        np.stack(out["xpos"]),
        np.stack(out["xquat"]),
        np.stack(out["site_xpos"]),
        np.stack(out["site_xmat"]).reshape(n, -1, 3, 3),
    )
    return kin, np.array(touching)


def replay(meta: dict, arrays: dict[str, np.ndarray], prefix: str, whole: bool = True) -> Replay:
    """Replays episode `meta`; `whole`: with the reference's body/site/geom frames
    written into the model (False: metasim's own compile of them)."""
    task, k = meta["task"], meta["episode"]
    fields = ("qpos", "qvel", "mocap_pos", "mocap_quat", "ctrl", "qacc_warmstart")
    rows = {f: arrays[f"{task}/{k}/{f}"] for f in fields}
    own = episode_model(meta, prefix)
    model = episode_model(meta, prefix, arrays) if whole else own
    touch = "objGeom" if task == "stick-push-v3" else None
    kin, touching = kinematics(model, rows, touch, prefix)
    n = len(kin.qpos)
    first = Kinematics(*(np.repeat(a[:1], n, axis=0) for a in vars(kin).values()))
    target = np.tile(np.asarray(meta["target"]), (n, 1))
    state = MwState(model, kin, target, init=first, touching=touching, robot_prefix=prefix)
    ref_obs = arrays[f"{task}/{k}/obs"]
    frames = frame(task, state)
    prev = np.concatenate([ref_obs[:1, :18], ref_obs[:1, :18], frames[1:-1]])
    at_reset = observation(task, state, None, clip=False)[0]
    return Replay(
        task,
        arrays[f"{task}/{k}/success"][1:].astype(bool),
        success(task, state)[1:],
        ref_obs[1:],
        observation(task, state, prev)[1:],
        float(np.abs(at_reset - ref_obs[0]).max()),
        compile_gaps(own, meta, arrays),
    )
