"""The MjModel element table, one for every benchmark: the numeric fields of an MjModel and
the names of their rows, enumerated the same way in any MuJoCo version. A reference worker
(LIBERO's and robosuite's MuJoCo 3.17, Meta-World's 3.3.0, in their own venvs; refwire
hands it this file, `spec.TABLES`) and metasim's model diff (MuJoCo 4) both call it. Pure:
imports numpy only (the caller passes its `mujoco`), never metasim."""

from __future__ import annotations

from typing import Any

import numpy as np

# MjModel element kinds dumped by `model_arrays`: array prefix -> (size attribute, mjtObj
# name). `dof` elements have no names of their own (their joint names them).
MODEL_KINDS = {
    "body": ("nbody", "mjOBJ_BODY"),
    "jnt": ("njnt", "mjOBJ_JOINT"),
    "dof": ("nv", ""),
    "geom": ("ngeom", "mjOBJ_GEOM"),
    "site": ("nsite", "mjOBJ_SITE"),
    "cam": ("ncam", "mjOBJ_CAMERA"),
    "light": ("nlight", "mjOBJ_LIGHT"),
    "actuator": ("nu", "mjOBJ_ACTUATOR"),
    "tendon": ("ntendon", "mjOBJ_TENDON"),
    "eq": ("neq", "mjOBJ_EQUALITY"),
    "mesh": ("nmesh", "mjOBJ_MESH"),
    "mat": ("nmat", "mjOBJ_MATERIAL"),
    "tex": ("ntex", "mjOBJ_TEXTURE"),
    "pair": ("npair", "mjOBJ_PAIR"),
    "exclude": ("nexclude", "mjOBJ_EXCLUDE"),
    "sensor": ("nsensor", "mjOBJ_SENSOR"),
}
# Structs of global settings that act on physics (opt) or on rendering (vis).
MODEL_STRUCTS = ("opt", "vis.global_", "vis.quality", "vis.headlight", "vis.map")


def _struct_fields(obj: Any, prefix: str) -> dict[str, Any]:
    """The numeric fields of one MjOption/MjVisual struct as {"<prefix>.<field>": value}."""
    out: dict[str, Any] = {}
    for key in dir(obj):
        value = getattr(obj, key) if not key.startswith("_") else None
        if isinstance(value, bool | int | float | np.ndarray) and not callable(value):
            out[f"{prefix}.{key}"] = np.asarray(value, dtype=np.float64).reshape(-1)
    return out


# Flat data arrays the elements point into: array -> (kind, address field, count field,
# values per count). `model_arrays` summarises each element's slice (its mean per column
# and a CRC32 of its bytes) instead of shipping them (tex_data alone is ~190 MB).
MODEL_SLICES = {
    "mesh_vert": ("mesh", "mesh_vertadr", "mesh_vertnum"),
    "mesh_normal": ("mesh", "mesh_normaladr", "mesh_normalnum"),
    "mesh_texcoord": ("mesh", "mesh_texcoordadr", "mesh_texcoordnum"),
    "mesh_face": ("mesh", "mesh_faceadr", "mesh_facenum"),
    "tex_data": ("tex", "tex_adr", ""),
}


def _slices(m: Any) -> dict[str, np.ndarray]:
    """Per-element summaries of the `MODEL_SLICES` data: `<array>@mean` (n, columns) and
    `<array>@crc` (n,) of each element's rows (a texture's bytes: height x width x
    nchannel)."""
    import zlib

    out: dict[str, np.ndarray] = {}
    for key, (_kind, adr_key, num_key) in MODEL_SLICES.items():
        if not hasattr(m, key):
            continue
        data = np.asarray(getattr(m, key))
        columns = int(np.prod(data.shape[1:]))  # 1 for a flat array; an empty one too
        data = data.reshape(len(data), columns)
        adr = np.asarray(getattr(m, adr_key))
        if num_key:
            num = np.asarray(getattr(m, num_key))
        else:  # textures: bytes per texture
            num = np.asarray(m.tex_height) * np.asarray(m.tex_width) * np.asarray(m.tex_nchannel)
        means, crcs = [], []
        for a, n in zip(adr, num, strict=True):
            part = np.ascontiguousarray(data[int(a) : int(a) + int(n)]) if a >= 0 else data[:0]
            means.append(part.mean(axis=0) if len(part) else np.zeros(data.shape[1]))
            crcs.append(zlib.crc32(part.tobytes()))
        out[f"{key}@mean"] = np.array(means, dtype=np.float64).reshape(len(adr), data.shape[1])
        out[f"{key}@crc"] = np.array(crcs, dtype=np.int64)
    return out


def model_arrays(m: Any, mujoco: Any) -> dict[str, Any]:
    """Every per-element numeric array of MjModel `m` (attributes `<kind>_*` whose first
    axis has one row per element of a `MODEL_KINDS` kind), summaries of the data arrays
    the elements point into (`MODEL_SLICES`), the global structs (`MODEL_STRUCTS`
    fields), the element names per kind and the element counts. Pure: used by the worker
    (MuJoCo 3.17) and by metasim's model diff (MuJoCo 4) alike, so both sides are
    enumerated the same way."""
    counts = {kind: int(getattr(m, size)) for kind, (size, _) in MODEL_KINDS.items()}
    arrays: dict[str, np.ndarray] = {}
    for key in dir(m):
        if key.startswith("_") or not isinstance(value := getattr(m, key), np.ndarray):
            continue
        kind = key.split("_", 1)[0]
        if kind in counts and value.ndim and value.shape[0] == counts[kind]:
            arrays[key] = np.array(value)
    arrays.update(_slices(m))
    names = {
        kind: [mujoco.mj_id2name(m, getattr(mujoco.mjtObj, obj), i) or "" for i in range(n)]
        for kind, n in counts.items()
        if (obj := MODEL_KINDS[kind][1])
    }
    structs: dict[str, Any] = {}
    for path in MODEL_STRUCTS:
        obj = m
        for part in path.split("."):
            obj = getattr(obj, part)
        structs.update(_struct_fields(obj, path))
    return {"arrays": arrays, "names": names, "structs": structs, "counts": counts}


def element_names(m: Any, key: str, rows: int, mujoco: Any) -> list[str]:
    """Names of the rows of MjModel array `key` (`rows` of them): the element's name, or
    "#<row>" for an unnamed element or an array that is not one row per named element
    (dof_*, qpos0, ...)."""
    size, obj = MODEL_KINDS.get(key.split("_", 1)[0], ("", ""))
    if obj and rows == int(getattr(m, size)):
        kind = getattr(mujoco.mjtObj, obj)
        return [mujoco.mj_id2name(m, kind, i) or f"#{i}" for i in range(rows)]
    return [f"#{i}" for i in range(rows)]
