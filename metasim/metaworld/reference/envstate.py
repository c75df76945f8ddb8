"""What a live Meta-World env holds, read inside the reference venv (metaworld 3.1.1 on
MuJoCo 3.3.0): the joint table, the model fields the env wrote relative to a freshly
compiled task XML, the numeric attributes reset sets, the robot's geoms and their contacts.
Handed to `worker.py` by refwire (loaded by path, with the kit's element table
`metasim/reference/mjtable.py`); imports no metasim (stdlib, numpy, mujoco only).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from typing import Any

import mujoco
import numpy as np

# The Sawyer's file: every body it defines is the robot's (metasim prefixes them `robot/`).
ROBOT_XML = os.path.join("assets", "objects", "assets", "xyz_base.xml")
MAX_ATTR = 64  # numeric env attributes longer than this are not reported


def name(m: Any, kind: str, i: int) -> str:
    return mujoco.mj_id2name(m, getattr(mujoco.mjtObj, kind), i) or ""


def joint_table(m: Any) -> list[list[Any]]:
    """[name, type (mjtJoint), nq, nv] per joint, in model order (= qpos/qvel order)."""
    sizes = {0: (7, 6), 1: (4, 3), 2: (1, 1), 3: (1, 1)}
    return [
        [name(m, "mjOBJ_JOINT", j), int(m.jnt_type[j]), *sizes[int(m.jnt_type[j])]]
        for j in range(m.njnt)
    ]


def model_fields(m: Any) -> list[str]:
    """Every numeric array field of an MjModel (sizes and names excluded)."""
    out = []
    for field in dir(m):
        value = getattr(m, field, None) if not field.startswith("_") else None
        if isinstance(value, np.ndarray) and value.dtype.kind in "fiu" and value.ndim >= 1:
            out.append(field)
    return [f for f in out if f not in ("name_bodyadr",) and not f.startswith("name_")]


def changed_rows(fresh: Any, live: Any) -> dict[str, np.ndarray]:
    """field -> the row indexes where the live model differs from the fresh one."""
    out = {}
    for field in model_fields(live):
        a, b = getattr(fresh, field), np.asarray(getattr(live, field))
        if a.shape != b.shape or not a.size:
            continue
        differ = a != b
        if (
            a.dtype.kind == "f"
        ):  # NaN in both (e.g. a degenerate mesh polygon's normal) is no change
            differ &= ~(np.isnan(a) & np.isnan(b))
        rows = np.flatnonzero(np.any(differ.reshape(len(a), -1), axis=1))
        if rows.size:
            out[field] = rows
    return out


def numeric_attrs(env: Any) -> dict[str, np.ndarray]:
    """The env's numeric instance attributes (scalars, vectors up to MAX_ATTR long) as arrays."""
    out = {}
    for key, value in vars(env).items():
        if isinstance(value, bool | np.bool_) or value is None:
            continue
        if isinstance(value, int | float | np.number):
            out[key] = np.asarray(value, dtype=np.float64)
        elif isinstance(value, np.ndarray) and value.dtype.kind in "fiu" and value.ndim <= 1:
            if value.size <= MAX_ATTR:
                out[key] = np.asarray(value, dtype=np.float64).copy()
    return out


def attrs_set(before: dict[str, np.ndarray], after: dict[str, np.ndarray]) -> set[str]:
    """Names reset wrote: absent before, or now a different value or shape."""
    return {
        k
        for k, v in after.items()
        if k not in before or before[k].shape != v.shape or not np.array_equal(before[k], v)
    }


def robot_bodies(m: Any, package_root: str) -> set[int]:
    """Ids of the bodies defined in the Sawyer's file `xyz_base.xml`."""
    tree = ET.parse(os.path.join(package_root, ROBOT_XML))
    names = {b.get("name") for b in tree.iter("body") if b.get("name")}
    return {b for b in range(m.nbody) if name(m, "mjOBJ_BODY", b) in names}


def robot_contacts(m: Any, d: Any, robot: set[int]) -> list[list[str]]:
    """The active contacts between a robot geom and a non-robot geom:
    [robot body, robot geom, other body, other geom] names ("" for an unnamed geom)."""
    out = []
    for c in d.contact[: d.ncon]:
        g = (int(c.geom1), int(c.geom2))
        bodies = (int(m.geom_bodyid[g[0]]), int(m.geom_bodyid[g[1]]))
        mine = [b in robot for b in bodies]
        if mine[0] == mine[1]:
            continue
        r, o = (0, 1) if mine[0] else (1, 0)
        out.append(
            [
                name(m, "mjOBJ_BODY", bodies[r]),
                name(m, "mjOBJ_GEOM", g[r]),
                name(m, "mjOBJ_BODY", bodies[o]),
                name(m, "mjOBJ_GEOM", g[o]),
            ]
        )
    return out


def free_joints(m: Any) -> list[tuple[str, int]]:
    """(name, qpos address) of every free joint (the loose objects)."""
    return [
        (name(m, "mjOBJ_JOINT", j), int(m.jnt_qposadr[j]))
        for j in range(m.njnt)
        if int(m.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE)
    ]


def snapshot(env: Any, frees: list[tuple[str, int]]) -> dict[str, np.ndarray]:
    """The state a parity check compares: tcp_center (3,), hand body position (3,), free
    joints' positions (n_free, 3), qpos (nq,), qvel (nv,)."""
    d = env.data
    objects = np.array([d.qpos[a : a + 3] for _, a in frees]).reshape(len(frees), 3)
    return {
        "tcp_center": np.array(env.tcp_center, dtype=np.float64),
        "hand": np.array(d.body("hand").xpos, dtype=np.float64),
        "object_pos": objects,
        "qpos": np.array(d.qpos),
        "qvel": np.array(d.qvel),
    }


class _Fields:
    """A copy of a model's arrays read as attributes (what `changed_rows` compares)."""

    def __init__(self, arrays: dict[str, Any]) -> None:
        self.__dict__.update(arrays)


def reset_row(env: Any, obs: Any, attrs: dict[str, Any]) -> dict[str, Any]:
    """One variation's state after reset (`MetaWorldRef.init_states` lists the keys)."""
    d = env.data
    return {
        "qpos": np.array(d.qpos),
        "qvel": np.array(d.qvel),
        "mocap_pos": np.array(d.mocap_pos),
        "mocap_quat": np.array(d.mocap_quat),
        "obs": np.array(obs, dtype=np.float64),
        "tcp_center": np.array(env.tcp_center, dtype=np.float64),
        "hand": np.array(d.body("hand").xpos),
        # copies: basketball's `_target_pos` is a view of the goal site's xpos, and a
        # reused env's next reset would rewrite it
        "target_pos": np.array(env._target_pos, dtype=np.float64).reshape(3),
        "rand_vec": np.array(env._last_rand_vec, dtype=np.float64),
        "attrs": attrs,
    }


def stack_attrs(rows: list[dict[str, Any]], names: set[str]) -> dict[str, Any]:
    """{attribute: (K, ...)} for the attributes reset wrote in any variation that every
    variation has with one shape."""
    keep = sorted(k for k in names if all(k in r and r[k].shape == rows[0][k].shape for r in rows))
    return {k: np.stack([r[k] for r in rows]) for k in keep}


def model_changes(
    fresh: Any, model: Any, lives: list[dict[str, Any]], tables: Any
) -> dict[str, Any]:
    """{field: {"names": [...], "rows": (n,), "values": (K, n, ...)}}: the elements of
    each field that differ from the fresh XML's in any variation, with every
    variation's values; rows named by the element table (`tables`, the kit's mjtable)."""
    union: dict[str, set[int]] = {}
    for live in lives:
        for field, rows in changed_rows(fresh, _Fields(live)).items():
            union.setdefault(field, set()).update(int(r) for r in rows)
    out = {}
    for field, ids in sorted(union.items()):
        idx = np.array(sorted(ids), dtype=np.int64)
        names = tables.element_names(model, field, len(getattr(model, field)), mujoco)
        out[field] = {
            "names": [names[i] for i in idx],
            "rows": idx,
            "values": np.stack([live[field][idx] for live in lives]),
            "fresh": np.array(getattr(fresh, field))[idx],
        }
    return out


# What a task's reset writes in the model (docs/metaworld.md, "What reset writes").
RESET_FIELDS = ("body_pos", "body_quat", "site_pos", "site_quat", "geom_pos", "geom_size")


def built_state(env: Any) -> dict[str, Any]:
    """The model fields reset may write, and the data, of the env's XML as compiled (what
    a new env holds before its first reset; `set_task` may already have reset this one)."""
    import mujoco

    model = mujoco.MjModel.from_xml_path(env.model_name)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return {
        "model": {f: np.array(getattr(model, f)) for f in RESET_FIELDS},
        "qpos": np.array(data.qpos), "qvel": np.array(data.qvel),
        "mocap_pos": np.array(data.mocap_pos), "mocap_quat": np.array(data.mocap_quat),
    }  # fmt: skip


def as_built(env: Any, snap: dict[str, Any]) -> None:
    """Put a reused env back as it was built: model fields, state and kinematics. Some
    resets read positions before recomputing them (basketball's `_target_pos` reads the
    hoop where the previous variation left it); a new env reads them as built."""
    import mujoco

    for f, v in snap["model"].items():
        getattr(env.model, f)[:] = v
    for key in ("qpos", "qvel", "mocap_pos", "mocap_quat"):
        getattr(env.data, key)[:] = snap[key]
    mujoco.mj_forward(env.model, env.data)


def timed_steps(env: Any, actions: np.ndarray) -> float:
    """Seconds for env.step over `actions` (T, 4) after a reset, resetting at truncation
    (resets inside the loop count, as in an evaluation loop)."""
    import time

    env.reset()
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    return time.perf_counter() - start


def episode(env: Any, policy: Any, horizon: int, until_success: bool) -> dict[str, Any]:
    """One episode of `policy` in the package's own loop: success, first-success step
    (0 if none), steps run, seconds, max_path_length, the final tool centre."""
    import time

    start = time.perf_counter()
    obs, _ = env.reset()
    first, ran = 0, 0
    for ran in range(1, horizon + 1):
        obs, _, terminated, truncated, info = env.step(policy.get_action(obs))
        if info["success"] and not first:
            first = ran
        if terminated or truncated or (first and until_success):
            break
    return {
        "success": bool(first),
        "steps": first,
        "ran": ran,
        "seconds": time.perf_counter() - start,
        "max_path_length": int(env.max_path_length),
        "hand": np.asarray(env.tcp_center, dtype=np.float64),
    }
