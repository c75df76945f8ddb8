"""metasim: simulator-agnostic robot simulation and real-to-sim policy evaluation."""

import os

# Offscreen rendering without a display: EGL (Mesa) unless the user chose otherwise.
# Must be set before mujoco is first imported.
os.environ.setdefault("MUJOCO_GL", "egl")

__version__ = "0.1.0"
