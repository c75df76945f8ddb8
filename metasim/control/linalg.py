"""Small batched linear algebra for the per-step controllers (IK, OSC).

numpy's `linalg.solve` / `linalg.inv` check their arguments and enter an `errstate`
context on every call, which costs more than solving a 6x6 system; the controllers call
numpy's gufuncs directly. A singular matrix then comes back as NaNs (with numpy's invalid
flag) instead of raising LinAlgError.
"""

from __future__ import annotations

import numpy as np

_gufuncs = getattr(np.linalg, "_umath_linalg", None)
solve = getattr(_gufuncs, "solve", np.linalg.solve)  # (..., k, k), (..., k, m) -> (..., k, m)
inv = getattr(_gufuncs, "inv", np.linalg.inv)  # (..., k, k) -> (..., k, k)

_EYES: dict[tuple[int, float], np.ndarray] = {}


def scaled_eye(k: int, scale: float = 1.0) -> np.ndarray:
    """scale * I of size k, made once per (k, scale); callers must not write to it."""
    key = (k, scale)
    out = _EYES.get(key)
    if out is None:
        out = _EYES[key] = scale * np.eye(k)
        out.flags.writeable = False
    return out
