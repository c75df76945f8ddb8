"""Native MuJoCo backend: one MjData per env, stepped on a thread pool."""

from metasim.sim import BACKENDS, Handler

FIDELITY = (
    "reference: native MuJoCo (float64); a scene's physics settings (e.g. Meta-World's "
    "equality_jdotv: false) step as the benchmark's own MuJoCo version does"
)


@BACKENDS.register("mujoco")
def load_handler() -> type[Handler]:
    """The native handler class (imported when the backend is asked for)."""
    from metasim.sim.mujoco.handler import BackendHandler

    return BackendHandler
