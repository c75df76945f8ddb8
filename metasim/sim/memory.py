"""A memory estimate per env from the compiled model, checked before envs are made.

Each env of the native backend holds at most its own copy of the model (made once a
field is set per env: a perturbation, a fixture's placement) and its own MjData (made to
step the envs in lockstep), of which the arena is used about as far as a forward pass
at the initial state reaches. So per env:

    mj_sizeModel(model) + MjData.nbuffer + the arena one mj_forward used + 1 MiB

(the MiB: what allocating an MjData touches besides, and the env's own buffers; measured
here with a model copy and an MjData per env after a forward: lift_cube 1.1 MB estimated,
0.5 MB grown; Meta-World's reach-v3 19.9 MB, 18.5 MB (17.7 MB/env in a run); LIBERO's
libero_spatial/0 270 MB, 264 MB). `check_env_memory` refuses a `num_envs` whose
estimate exceeds the memory this machine has available (MemAvailable in /proc/meminfo,
read as the envs are asked for; no check where it cannot be read) or
METASIM_ENV_MEMORY_BYTES where that is set, with an input error (exit 2) that gives the
estimate. Eval and collect check before the run folder is written, `bench physics`
before it starts, and every native `MetasimVectorEnv` (`gym.make_vec` included) before
it allocates.
"""

from __future__ import annotations

from pathlib import Path

import mujoco

from metasim.errors import MetasimInputError
from metasim.yamlio import LIMITS, limit

ENV = "METASIM_ENV_MEMORY_BYTES"
LIMITS[ENV] = 0  # unset: this machine's MemAvailable
MEMINFO = Path("/proc/meminfo")
OVERHEAD = 1 << 20  # per env, besides the model and the MjData's own sizes


def per_env_bytes(model: mujoco.MjModel) -> int:
    """The estimate of one env's memory (see the module doc)."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return int(mujoco.mj_sizeModel(model) + data.nbuffer + data.maxuse_arena) + OVERHEAD


def mem_available(meminfo: Path = MEMINFO) -> int | None:
    """MemAvailable of /proc/meminfo in bytes; None where it cannot be read."""
    try:
        for line in meminfo.read_text().splitlines():
            name, _, value = line.partition(":")
            if name == "MemAvailable":
                return int(value.split()[0]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def check_env_memory(model: mujoco.MjModel, num_envs: int, where: str, scene: str = "") -> int:
    """The estimate for `num_envs` envs of `model` in bytes; over the memory available
    (or METASIM_ENV_MEMORY_BYTES) it is an input error naming `where` (the argument that
    set `num_envs`) with the estimate."""
    per = per_env_bytes(model)
    total = per * num_envs
    cap = limit(ENV)
    source = ENV
    if cap == 0:  # not set
        available = mem_available()
        if available is None:
            return total
        cap, source = available, "the memory available here (MemAvailable)"
    if total <= cap:
        return total
    of = f" of {scene}" if scene else ""
    raise MetasimInputError(
        where,
        [
            f"{num_envs} envs{of} need about {_gib(total)} ({per / 2**20:.1f} MiB each, "
            f"estimated from the compiled model), over the {_gib(cap)} of {source}"
        ],
        f"Ask for at most {max(cap // per, 0)} envs, or set {ENV}=<bytes> if they fit",
    )
