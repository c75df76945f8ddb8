"""A memory estimate per env from the compiled model, checked before envs are made.

Each env of the native backend holds its own MjData at most (made to step the envs in
lockstep), of which the arena is used about as far as a forward pass at the initial
state reaches, and its rows of the handler's batch buffers. No env holds a model copy:
per-env model edits (perturbations, a fixture's placement) are loaded into one model per
physics thread (`metasim.sim.mujoco.env_models`), the scene's own for the first and a
twin with 1x1 textures for each other, compiled once (its compile peaks at about twice
its size besides) where edited envs step on several threads (not in lockstep: LIBERO's
`osc_pose` makes none; counted anyway, as an upper bound). So:

    per env:     MjData.nbuffer + the arena one mj_forward used + 2 MiB
    per thread:  mj_sizeModel(model) - the texture bytes, for each thread but the first,
                 and twice that for the twins' compile (none with one thread)

(the 2 MiB: what stepping touches in the arena besides, with contacts, and the env's
rows of the buffers; measured in a fresh process, growth per added env, one thread:
LIBERO's libero_spatial/0 in lockstep 2.0 MB, estimated 2.8 MB; Meta-World's reach-v3
0.01 MB, 2.2 MB; with a model copy per env they held 264 MB and 18.5 MB).
Camera images count per env too (`image_bytes`): each view's frame (3 bytes a pixel, a
depth view's 4) FRAME_COPIES times: the batch, the policy's copy, the bounds (low, high)
of the vector env's observation space and gymnasium's check of them; MuJoCo Warp's ray tracer
(render=warp) also holds each view's n x n sub-pixels (render_spp = n) packed in 4 bytes
each and its resolved frame, counted here as host memory even where it runs on a GPU (an
upper bound; set METASIM_ENV_MEMORY_BYTES where the device holds them). So 4096 envs of
a 4096² camera are refused up front instead of failing to allocate, or crawling, midway.
`check_env_memory` refuses a `num_envs` whose estimate exceeds the memory this machine
has available (MemAvailable in /proc/meminfo, read as the envs are asked for; no check
where it cannot be read) or METASIM_ENV_MEMORY_BYTES where that is set, with an input
error (exit 2) that gives the estimate. Eval and collect check before the run folder is
written, `bench physics` before it starts, and every native `MetasimVectorEnv`
(`gym.make_vec` included) before it allocates.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import mujoco

from metasim.errors import MetasimInputError
from metasim.yamlio import LIMITS, limit

ENV = "METASIM_ENV_MEMORY_BYTES"
LIMITS[ENV] = 0  # unset: this machine's MemAvailable
MEMINFO = Path("/proc/meminfo")
OVERHEAD = 2 << 20  # per env, besides the MjData's own sizes
FRAME_COPIES = 5  # of each camera frame per env (module doc)


def per_env_bytes(model: mujoco.MjModel) -> int:
    """The estimate of one env's memory (see the module doc)."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return int(data.nbuffer + data.maxuse_arena) + OVERHEAD


def thread_bytes(model: mujoco.MjModel, num_envs: int, threads: int | None = None) -> int:
    """The estimate of the physics threads' models besides the scene's: a twin without
    textures per thread but the first, and its compile (see the module doc). `threads`:
    the handler's (None: its default, every core)."""
    from metasim.sim.mujoco.rows import default_threads

    n = max(1, min(threads or default_threads(), num_envs))
    twin = mujoco.mj_sizeModel(model) - model.tex_data.nbytes
    return 0 if n == 1 else int((n - 1 + 2) * twin)


def env_memory_bytes(model: mujoco.MjModel, num_envs: int, threads: int | None = None) -> int:
    """The estimate for `num_envs` envs of `model`: theirs and their threads' models."""
    return per_env_bytes(model) * num_envs + thread_bytes(model, num_envs, threads)


def image_bytes(views: Iterable[tuple[int, int, bool]], samples: int | None = None) -> int:
    """One env's camera images (module doc): `views` (width, height, depth) rendered,
    `samples` the ray tracer's sub-pixels per axis (None: MuJoCo's OpenGL renderer)."""
    total = 0
    for width, height, depth in views:
        frame = width * height * (4 if depth else 3)
        total += FRAME_COPIES * frame
        if samples is not None:
            total += samples * samples * width * height * 4 + frame
    return total


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


def _of_images(images: int) -> str:
    return f" and the cameras' images ({images / 2**20:.1f} MiB of it)" if images else ""


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def check_env_memory(
    model: mujoco.MjModel,
    num_envs: int,
    where: str,
    scene: str = "",
    threads: int | None = None,
    images: int = 0,
    physics: bool = True,
) -> int:
    """The estimate for `num_envs` envs of `model` in bytes (`env_memory_bytes`, plus
    `images` bytes of camera images per env; `physics=False`: a device backend's, only
    the images); over the memory available (or METASIM_ENV_MEMORY_BYTES) it is an input
    error naming `where` (the argument that set `num_envs`) with the estimate."""
    per = (per_env_bytes(model) if physics else 0) + images
    workers = thread_bytes(model, num_envs, threads) if physics else 0
    total = per * num_envs + workers
    if per == 0:
        return total
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
            f"estimated from the compiled model{_of_images(images)}, and "
            f"{workers / 2**20:.0f} MiB for the physics threads' models), over the "
            f"{_gib(cap)} of {source}"
        ],
        f"Ask for at most {max((cap - workers) // per, 0)} envs, or set {ENV}=<bytes> if they fit",
    )
