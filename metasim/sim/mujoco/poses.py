"""The native handler's (B, ...) pose buffers, laid out as an MjData lays its poses out.

After each env's step the handler copies the env's body and site poses out of its thread's
scratch MjData twice (as mj_step left them, then after the kinematics refresh). Four small
copies per env cost more in Python than the bytes they move, and MuJoCo keeps `xpos` next
to `xquat` and `site_xpos` next to `site_xmat` in the data's memory. So the buffers are
made of (B, span) blocks mirroring those runs, each a single copy per env; the arrays a
`Kinematics` holds are views into them. Where an MjData lays them out otherwise (another
MuJoCo version), every array is a block of its own: the same values, more copies.
"""

from __future__ import annotations

import mujoco
import numpy as np

POSES = ("xpos", "xquat", "site_xpos", "site_xmat")


def _runs(d: mujoco.MjData) -> list[list[str]]:
    """The non-empty POSES grouped into runs adjacent in `d`'s memory (each next array at
    most 64 bytes of padding after the previous one's end)."""
    runs: list[list[str]] = []
    prev: np.ndarray | None = None
    for name in POSES:
        a = getattr(d, name)
        if a.size == 0:
            continue
        gap = None if prev is None else a.ctypes.data - (prev.ctypes.data + prev.nbytes)
        if runs and gap is not None and 0 <= gap < 64 and gap % 8 == 0:
            runs[-1].append(name)
        else:
            runs.append([name])
        prev = a
    return runs


def _span(d: mujoco.MjData, run: list[str]) -> np.ndarray:
    """A float64 view of `d`'s memory from the first array of `run` to the last's end."""
    first, last = getattr(d, run[0]), getattr(d, run[-1])
    n = (last.ctypes.data + last.nbytes - first.ctypes.data) // 8
    return np.lib.stride_tricks.as_strided(first.reshape(-1), shape=(n,), strides=(8,))


class PoseBuffers:
    """(B, ...) buffers of POSES for MjData laid out like `d`: `arrays` (in POSES' order,
    views into the blocks), `sources(d2)` the pairs that copy env i's poses from `d2`."""

    def __init__(self, d: mujoco.MjData, num_envs: int) -> None:
        self._runs = _runs(d)
        self._layout = self._offsets(d)
        self.blocks = [np.zeros((num_envs, len(_span(d, r)))) for r in self._runs]
        arrays = {}
        for name in POSES:
            a = getattr(d, name)
            if a.size == 0:
                arrays[name] = np.zeros((num_envs, *a.shape))
                continue
            k = next(k for k, run in enumerate(self._runs) if name in run)
            start = self._layout[k][name]
            arrays[name] = self.blocks[k][:, start : start + a.size].reshape(num_envs, *a.shape)
        self.arrays = tuple(arrays[name] for name in POSES)

    def _offsets(self, d: mujoco.MjData) -> list[dict[str, int]]:
        base = [getattr(d, r[0]).ctypes.data for r in self._runs]
        return [
            {n: (getattr(d, n).ctypes.data - b) // 8 for n in r}
            for r, b in zip(self._runs, base, strict=True)
        ]

    def sources(self, d: mujoco.MjData) -> list[np.ndarray]:
        """The spans of `d` to copy into `blocks` row i (`d` must be laid out alike)."""
        if _runs(d) != self._runs or self._offsets(d) != self._layout:
            raise ValueError("an MjData laid out unlike the one the pose buffers were made for")
        return [_span(d, r) for r in self._runs]


__all__ = ["POSES", "PoseBuffers"]
