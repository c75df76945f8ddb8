"""MJX backend: the handler API on JAX (`mujoco.mjx`), batched with `jit(vmap(...))`.

Same module names as `metasim.sim.mujoco`; the loader below registers the backend and
imports `handler` (and JAX) only when the backend is asked for. Needs the `mjx` extra
(`pip install -e .[mjx]`).
"""

from metasim.sim import BACKENDS, Handler

FIDELITY = (
    "trajectory: MJX in float64 follows native MuJoCo to 1e-9 m (Meta-World drawer-open); "
    "no host controller every substep (LIBERO's osc_pose runs natively only)"
)


@BACKENDS.register("mjx")
def load_handler() -> type[Handler]:
    """The MJX handler class (imports JAX: only when the backend is asked for)."""
    from metasim.sim.mjx.handler import BackendHandler

    return BackendHandler
