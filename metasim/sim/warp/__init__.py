"""MuJoCo Warp backend (`mujoco-warp` on NVIDIA Warp): the CPU device, or CUDA when present."""

from metasim.sim import BACKENDS, Handler


@BACKENDS.register("warp")
def load_handler() -> type[Handler]:
    """The Warp handler class (imports Warp: only when the backend is asked for)."""
    from metasim.sim.warp.handler import BackendHandler

    return BackendHandler
