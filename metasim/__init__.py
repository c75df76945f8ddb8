"""metasim: simulator-agnostic robot simulation and real-to-sim policy evaluation."""

import os

from metasim.gl import choose_mujoco_gl

# Offscreen rendering without a display: the user's MUJOCO_GL, else EGL where libEGL is
# found, else OSMesa, else none (metasim.gl). Must be set before mujoco is first imported.
choose_mujoco_gl(os.environ)

__version__ = "0.1.0"
