"""MuJoCo Warp backend (`mujoco-warp` on NVIDIA Warp): the CPU device, or CUDA when present."""

from metasim.sim import BACKENDS, Handler
from metasim.sim.cameras import RENDERERS, RigMaker

FIDELITY = (
    "trajectory within float32: MuJoCo Warp simulates in float32 (LIBERO with osc_pose on "
    "the device: end effector within 0.1 mm of native over 100 steps before contact; "
    "Meta-World's mocap weld without the J-dot-v term, physics.equality_jdotv: false, as "
    "native: tool centre within 1e-6 m of native over 40 steps); after contact, "
    "MuJoCo Warp's collision manifolds can part runs (outcome agreement)"
)


@BACKENDS.register("warp")
def load_handler() -> type[Handler]:
    """The Warp handler class (imports Warp: only when the backend is asked for)."""
    import warp as wp

    # Warp logs its banner and every module load to stdout at INFO, which would mix into a
    # command's JSON output (bench physics --backend warp): warnings only, set before it
    # initializes
    wp.config.log_level = wp.LOG_WARNING
    from metasim.sim.warp.handler import BackendHandler

    return BackendHandler


@RENDERERS.register("warp")
def load_rig() -> RigMaker:
    """The ray-traced camera rig (imports Warp and MuJoCo Warp: only when asked for)."""
    load_handler()  # Warp's log level, as for the backend
    from metasim.sim.warp.cameras import WarpRig

    return WarpRig
