"""Dump a task XML as the reference's MuJoCo (3.3.0, in the reference venv) compiles it:
every numeric `MjModel` array and the `opt` struct, to an `.npz`. Run by path inside the
reference venv (`python -P compiledump.py <xml> <out.npz>`); imports numpy and mujoco
only, never metasim."""

from __future__ import annotations

import sys
from typing import Any

import mujoco
import numpy as np


def dump(xml: str, out: str) -> None:
    m = mujoco.MjModel.from_xml_path(xml)
    arrays = {}
    for key in dir(m):
        value = getattr(m, key, None) if not key.startswith("_") else None
        if isinstance(value, np.ndarray) and value.dtype.kind in "fiub":
            arrays[key] = np.array(value)
    for key in dir(m.opt):
        value = getattr(m.opt, key) if not key.startswith("_") else None
        if isinstance(value, bool | int | float | np.ndarray) or hasattr(value, "__int__"):
            try:
                arrays[f"opt.{key}"] = np.asarray(value, dtype=np.float64).reshape(-1)
            except (TypeError, ValueError):
                continue
    arrays["mujoco_version"] = np.array(mujoco.__version__)
    savez: Any = np.savez  # numpy's stubs type **arrays as savez's flags
    savez(out, **arrays)


if __name__ == "__main__":
    dump(sys.argv[1], sys.argv[2])
