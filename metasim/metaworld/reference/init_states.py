"""The package's per-variation reset states, read once from the reference and cached on
disk, so metasim's importer can put episode k of a task in the package's initial state
without starting the reference venv each time.

    states = init_states("pick-place-v3", "MT50", variations=range(10))
    states.qpos[k], states.qvel[k], states.mocap_pos[k]      # joints in states.joints order
    for field, change in states.model.items():                # what reset wrote in the model
        model_array = getattr(model, field); model_array[change.rows] = change.values[k]

The cache is one `.npz` per (benchmark, split, seed, task, variations, reference
requirements) under `$METASIM_CACHE` (or ~/.cache/metasim, as LIBERO's generated files)
in `metaworld-init/`; written atomically, read with allow_pickle=False.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from metasim.metaworld.reference.simulator import REQUIREMENTS, MetaWorldRef
from metasim.paths import cache_dir

FORMAT = 2  # bump when the stored layout or the recording changes
ARRAYS = (
    *("qpos", "qvel", "mocap_pos", "mocap_quat", "obs"),
    *("tcp_center", "hand", "target_pos", "rand_vec", "seconds"),
)


@dataclass(frozen=True)
class ModelChange:
    """One model field's elements that differ from the freshly compiled task XML: names
    [n] ("#<row>" when unnamed), rows (n,) into the field, values (K, n, ...) per
    variation, fresh (n, ...) the XML's own values (in the reference's MuJoCo layout)."""

    names: tuple[str, ...]
    rows: np.ndarray
    values: np.ndarray
    fresh: np.ndarray


@dataclass(frozen=True)
class InitStates:
    """The reset states of K variations of one task (`MetaWorldRef.init_states`): joints
    [(name, mjtJoint type, nq, nv)]; qpos (K, nq), qvel (K, nv), mocap_pos (K, m, 3),
    mocap_quat (K, m, 4), obs (K, 39), tcp_center (K, 3), hand (K, 3), target_pos
    (K, 3), rand_vec (K, d), seconds (K,) (the reference's time per variation); model
    changes by field; attrs: the env attributes reset wrote, each (K, ...)."""

    task: str
    benchmark: str
    split: str
    seed: int
    variations: tuple[int, ...]
    joints: tuple[tuple[str, int, int, int], ...]
    arrays: dict[str, np.ndarray]
    model: dict[str, ModelChange]
    attrs: dict[str, np.ndarray]
    max_path_length: int

    def __getattr__(self, key: str) -> np.ndarray:
        arrays = self.__dict__.get("arrays", {})
        if key in arrays:
            return np.asarray(arrays[key])
        raise AttributeError(key)


def cache_file(task: str, benchmark: str, split: str, seed: int, variations: list[int]) -> Path:
    """The cache file of one request; the key includes the reference's requirements."""
    key = json.dumps([FORMAT, benchmark, split, seed, task, variations, REQUIREMENTS])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / "metaworld-init" / f"{task}-{benchmark}-{split}-s{seed}-{digest}.npz"


@functools.cache
def shared_ref() -> MetaWorldRef:
    """One reference worker per process for recordings (a worker keeps the benchmarks it
    built: constructing MT50 resets every env 50 times, about 30 s), closed at exit."""
    ref = MetaWorldRef()
    atexit.register(ref.close)
    return ref


def init_states(
    task: str,
    benchmark: str = "MT50",
    split: str = "train",
    seed: int = 0,
    variations: Iterable[int] = (0,),
    *,
    ref: MetaWorldRef | None = None,
) -> InitStates:
    """The reset states of `variations` of `task`, from the cache or else from the
    reference (`ref`, or a worker started for this call), then cached."""
    ks = [int(k) for k in variations]
    path = cache_file(task, benchmark, split, seed, ks)
    if path.exists():
        return read(path)
    reply = (ref or shared_ref()).init_states(task, benchmark, split, seed, ks)
    states = from_reply(reply, task, benchmark, split, seed)
    write(states, path)
    return states


def from_reply(
    reply: dict[str, Any], task: str, benchmark: str, split: str, seed: int
) -> InitStates:
    """An `InitStates` from `MetaWorldRef.init_states`'s reply."""
    model = {
        field: ModelChange(
            tuple(str(n) for n in d["names"]),
            np.asarray(d["rows"]),
            np.asarray(d["values"]),
            np.asarray(d["fresh"]),
        )
        for field, d in reply["model"].items()
    }
    return InitStates(
        task=task,
        benchmark=benchmark,
        split=split,
        seed=seed,
        variations=tuple(int(k) for k in reply["variations"]),
        joints=tuple((str(j[0]), int(j[1]), int(j[2]), int(j[3])) for j in reply["joints"]),
        arrays={k: np.asarray(reply[k]) for k in ARRAYS},
        model=model,
        attrs={k: np.asarray(v) for k, v in reply["attrs"].items()},
        max_path_length=int(reply["max_path_length"]),
    )


def write(states: InitStates, path: Path) -> None:
    """Store `states` as one .npz (arrays, plus a JSON `meta` string), atomically."""
    meta = {
        "task": states.task,
        "benchmark": states.benchmark,
        "split": states.split,
        "seed": states.seed,
        "variations": list(states.variations),
        "joints": [list(j) for j in states.joints],
        "model": {f: list(c.names) for f, c in states.model.items()},
        "max_path_length": states.max_path_length,
    }
    flat: dict[str, np.ndarray] = {"meta": np.array(json.dumps(meta))}
    flat.update({f"array/{k}": v for k, v in states.arrays.items()})
    flat.update({f"attr/{k}": v for k, v in states.attrs.items()})
    for field, c in states.model.items():
        flat.update(
            {f"model/{field}/{part}": getattr(c, part) for part in ("rows", "values", "fresh")}
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.part")
    with os.fdopen(fd, "wb") as out:
        savez: Any = np.savez  # numpy's stub reads **flat as its allow_pickle flag
        savez(out, **flat)
    os.replace(tmp, path)


def read(path: Path) -> InitStates:
    """The `InitStates` stored by `write`."""
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
        model = {
            field: ModelChange(
                tuple(names), *(data[f"model/{field}/{p}"] for p in ("rows", "values", "fresh"))
            )
            for field, names in meta["model"].items()
        }
        return InitStates(
            task=meta["task"],
            benchmark=meta["benchmark"],
            split=meta["split"],
            seed=int(meta["seed"]),
            variations=tuple(meta["variations"]),
            joints=tuple((str(a), int(b), int(c), int(d)) for a, b, c, d in meta["joints"]),
            arrays=_part(data, "array/"),
            model=model,
            attrs=_part(data, "attr/"),
            max_path_length=int(meta["max_path_length"]),
        )


def _part(data: Any, prefix: str) -> dict[str, np.ndarray]:
    """The arrays of an open .npz whose keys start with `prefix`, keyed by the rest."""
    return {k[len(prefix) :]: data[k] for k in data.files if k.startswith(prefix)}
