"""What metasim takes from robosuite itself, once per task, through the reference worker
(robosuite 1.4.0 in its own venv), cached under `.cache/metasim/robosuite/<task>-<key>/`:

- `world.xml`: robosuite's own MJCF of the task (the XML it compiles: arena, objects,
  cameras, lights, every number as robosuite wrote it, assets by absolute path into the
  reference venv's robosuite), without the robot, which metasim builds itself from the
  same robosuite files (metasim.robosuite.importer.robot: the Panda on its Rethink mount);
- `states.npz`: robosuite's reset distribution, `N_STATES` draws: `states` (N, 1 + nq + nv)
  rows [time, qpos, qvel] after `np.random.seed(k); env.reset()` (placement samplers and
  the robot's initialization noise), `pos_<body>`/`quat_<body>` (N, 3|4) of each jointless
  body the reset places;
- `meta.json`: the joints (name, nq, nv) in robosuite's order, the robot's base position.

The model is built once with `np.random.seed(MODEL_SEED)` (Lift draws its cube's size
then); the reference used by the checks is built the same way, so both hold one model.
"""

from __future__ import annotations

import hashlib
import json
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from metasim.paths import cache_dir
from metasim.robosuite.tasks import task_facts

N_STATES = 50
MODEL_SEED = 0
ROBOT_PREFIXES = ("robot0_", "gripper0_", "mount0_")
_VERSION = "1"


@dataclass(frozen=True)
class Export:
    """A task's cached export: its folder, world file, states file and meta data."""

    folder: Path
    meta: dict[str, Any]

    @property
    def world(self) -> Path:
        return self.folder / "world.xml"

    @property
    def states(self) -> Path:
        return self.folder / "states.npz"


def folder_of(task: str) -> Path:
    """The task's cache folder, keyed also by the reference venv's path: the world names
    robosuite's asset files by absolute path into it, so an export made from another
    checkout's venv (gone with it) is not taken."""
    from metasim.robosuite.reference.simulator import VENV

    text = f"{_VERSION}:{task}:{MODEL_SEED}:{N_STATES}:{VENV.absolute()}"
    key = hashlib.sha1(text.encode()).hexdigest()[:10]
    return cache_dir() / "robosuite" / f"{task}-{key}"


def export(task: str) -> Export:
    """The task's export, made through the reference worker on first use."""
    folder = folder_of(task)
    if not (folder / "meta.json").is_file():
        _make(task, folder)
    return Export(folder, json.loads((folder / "meta.json").read_text()))


def _make(task: str, folder: Path) -> None:
    from metasim.robosuite.reference.simulator import RobosuiteRef

    facts = task_facts(task)
    with RobosuiteRef() as ref:
        info = ref.load(facts.env, seed=MODEL_SEED, placed=list(facts.placed))
        xml = ref.export()["xml"]
        rec = ref.record(list(range(N_STATES)))
    world, base = strip_robot(xml)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"tmp-{os.getpid()}"
    tmp.mkdir(exist_ok=True)
    (tmp / "world.xml").write_text(world, encoding="utf-8")
    poses: dict[str, Any] = {}
    for i, body in enumerate(facts.placed):
        poses[f"pos_{body}"] = rec["body_pos"][:, i]
        poses[f"quat_{body}"] = rec["body_quat"][:, i]
    np.savez(tmp / "states.npz", states=rec["states"], **poses)
    meta = {"task": task, "joints": info["joints"], "base": base, "nq": info["nq"],
            "control_freq": info["control_freq"], "placed": list(facts.placed)}  # fmt: skip
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    for name in ("world.xml", "states.npz", "meta.json"):  # meta.json last: the marker
        (tmp / name).replace(folder / name)
    tmp.rmdir()


def strip_robot(xml: str) -> tuple[str, list[float]]:
    """robosuite's world without its robot (the `robot0_base` subtree, the actuators,
    sensors, equalities, contact pairs and assets
    naming the robot's parts); returns it and the robot base's position."""
    root = ET.fromstring(xml)
    world = root.find("worldbody")
    assert world is not None
    base = next(b for b in world.findall("body") if b.get("name") == "robot0_base")
    pos = [float(v) for v in (base.get("pos") or "0 0 0").split()]
    world.remove(base)
    for tag in ("actuator", "sensor", "equality", "contact"):
        for section in root.findall(tag):
            for el in list(section):
                if any(v.startswith(ROBOT_PREFIXES) for v in el.attrib.values()):
                    section.remove(el)
    for asset in root.findall("asset"):
        for el in list(asset):
            if (el.get("name") or "").startswith(ROBOT_PREFIXES):
                asset.remove(el)
    return ET.tostring(root, encoding="unicode"), pos
