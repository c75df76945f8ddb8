"""Native MuJoCo backend: one MjData per env, stepped on a thread pool."""

from metasim.sim import BACKENDS, Handler


@BACKENDS.register("mujoco")
def load_handler() -> type[Handler]:
    """The native handler class (imported when the backend is asked for)."""
    from metasim.sim.mujoco.handler import BackendHandler

    return BackendHandler
