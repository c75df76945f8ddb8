"""The package's parametric variations as a scene's recorded initial states: episode k
starts from variation k mod K, exactly as the package's `reset()` leaves it (read once
from the reference and cached: `metasim.metaworld.reference.init_states`).

The reference's reply names joints, bodies, sites and geoms as the task XML does; here
they get metasim's names (`robot/` for the Sawyer's, `world/` for the rest) and become
one `.npz` that `task.init_states` reads: rows [time, qpos, qvel] over the named joints,
`mocap_pos`/`mocap_quat`, one array per model row reset wrote (a fixture's `body_pos`,
the goal's `site_pos`...) and the `mw_target` site at the episode's `_target_pos`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from metasim.errors import MetasimInputError
from metasim.metaworld.importer.model import (
    TARGET_SITE,
    WELD_DATA,
    reset_frame_sites,
    unnamed_joint,
)
from metasim.metaworld.state import WORLD_PREFIX
from metasim.paths import cache_dir
from metasim.scene.compile import ROBOT_PREFIX

VARIATIONS = 50  # a benchmark's variations per task (MT50: 50 per env name)
FIELDS = ("body_pos", "body_quat", "site_pos", "site_quat", "geom_pos", "geom_quat", "geom_size")


@functools.cache
def sawyer_names() -> dict[str, set[str]]:
    """kind (body, joint, site, geom) -> the Sawyer's element names (unprefixed)."""
    from metasim.metaworld.importer.model import robot_spec

    spec = robot_spec()
    return {
        "body": {b.name for b in spec.bodies},
        "jnt": {j.name for j in spec.joints},
        "site": {s.name for s in spec.sites},
        "geom": {g.name for g in spec.geoms if g.name},
    }


@functools.cache
def ignored_writes(task: str) -> frozenset[tuple[str, str]]:
    """(field, name) of the site and geom frame fields that MuJoCo ignores at run time in
    the package's own model: an element compiled at its body's frame (`sameframe` 1 or 2:
    pos and quat unused; 3 or 4: quat unused). The package's reset writes some of them
    (sweep-v3 writes the `goal` site's pos, a site at its body's origin): the write has
    no effect there, so an episode does not carry it (and cannot: metasim refuses
    per-episode rows MuJoCo would ignore)."""
    from metasim.metaworld.importer.model import load_task_spec

    m = load_task_spec(task).compile()
    out = set()
    for kind, obj, count in (("site", mujoco.mjtObj.mjOBJ_SITE, m.nsite),
                             ("geom", mujoco.mjtObj.mjOBJ_GEOM, m.ngeom)):  # fmt: skip
        same = getattr(m, f"{kind}_sameframe")
        for i in range(count):
            name = mujoco.mj_id2name(m, obj, i) or ""
            if int(same[i]) in (1, 2):
                out.add((f"{kind}_pos", name))
            if int(same[i]) != 0:
                out.add((f"{kind}_quat", name))
    return frozenset(out)


def metasim_name(kind: str, name: str) -> str:
    """The name of the task XML's element `name` of `kind` in metasim's model."""
    return (ROBOT_PREFIX if name in sawyer_names()[kind] else WORLD_PREFIX) + name


def states_file(
    task: str, benchmark: str, split: str, seed: int = 0
) -> tuple[Path, dict[str, Any]]:
    """The `.npz` of the task's variations and its `task.init_states` entry."""
    from metasim.metaworld.reference import init_states as ref_states

    states = ref_states.init_states(task, benchmark, split, seed, range(VARIATIONS))
    joints = [
        (metasim_name("jnt", n or unnamed_joint(k)), nq, nv)
        for k, (n, _, nq, nv) in enumerate(states.joints)
    ]
    k = len(states.variations)
    rows = np.concatenate([np.zeros((k, 1)), states.qpos, states.qvel], axis=1)
    arrays: dict[str, np.ndarray] = {
        "states": rows,
        "mocap_pos": np.asarray(states.mocap_pos, dtype=np.float64).reshape(k, -1, 3),
        "mocap_quat": np.asarray(states.mocap_quat, dtype=np.float64).reshape(k, -1, 4),
    }
    fields = []
    for field, change in sorted(states.model.items()):
        if field == "eq_data" and np.allclose(change.values[..., : len(WELD_DATA)], WELD_DATA):
            continue  # the constructor's weld data, which the robot file carries
        if field not in FIELDS:
            raise MetasimInputError(
                f"metaworld:{task}", [f"reset writes {field}, which initial states cannot carry"]
            )
        kind = field.split("_", 1)[0]
        for j, name in enumerate(change.names):
            if (field, name) in ignored_writes(task):
                continue  # MuJoCo ignores this write in the package too (sameframe)
            if name.startswith("#"):
                raise MetasimInputError(
                    f"metaworld:{task}", [f"reset writes {field} of an unnamed {kind} ({name})"]
                )
            key = f"{field}/{name}"
            arrays[key] = np.asarray(change.values[:, j], dtype=np.float64).reshape(k, -1)
            fields.append({"field": field, "name": metasim_name(kind, name), "key": key})
    arrays["target"] = np.asarray(states.target_pos, dtype=np.float64).reshape(k, 3)
    fields.append({"field": "site_pos", "name": WORLD_PREFIX + TARGET_SITE, "key": "target"})
    frame = np.asarray(states.obs, dtype=np.float64)[:, :18].reshape(k, 6, 3)
    for i, site in enumerate(reset_frame_sites()):
        arrays[site] = frame[:, i]
        fields.append({"field": "site_pos", "name": WORLD_PREFIX + site, "key": site})
    digest = hashlib.sha256(b"".join(a.tobytes() for a in arrays.values())).hexdigest()[:16]
    path = cache_dir() / "metaworld" / "states" / f"{task}-{benchmark}-{split}-s{seed}-{digest}.npz"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.part")
        with os.fdopen(fd, "wb") as out:
            savez: Any = np.savez
            savez(out, **arrays)
        os.replace(tmp, path)
    spec = {
        "file": str(path),
        "joints": [{"name": n, "nq": nq, "nv": nv} for n, nq, nv in joints],
        "controller": "fresh",
        "mocap": True,
        "state_fields": fields,
    }
    return path, spec


def target_of(model: mujoco.MjModel) -> int:
    """The `mw_target` site's id in a compiled Meta-World scene."""
    return int(model.site(WORLD_PREFIX + TARGET_SITE).id)
