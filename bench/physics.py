"""Eval-loop physics throughput against raw mujoco.rollout, measured in the same run.

    .venv/bin/python bench/physics.py [--num-envs 1 16 64] [--steps 200]

Same measurement as `metasim bench physics`; prints JSON.
"""

from __future__ import annotations

import sys

from metasim.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["bench", "physics", *sys.argv[1:]]))
