"""Backend parity on warp (Warp's CPU device) against native for two LIBERO and two
Meta-World episodes, one JSON line each (`BackendParity.summary()`): run it on a checkout
before and after a change and diff the outputs (docs/log/structure.md).

  PYTHONPATH=$PWD .venv/bin/python scripts/warp_parity_summaries.py > warp.jsonl
"""

from __future__ import annotations

import json

from metasim.evaluate.backend_parity import backend_parity
from metasim.scene.sources import compile_task

CASES = [
    ("libero:libero_goal/4", 3, 0),
    ("libero:libero_object/6", 7, 1),
    ("metaworld:MT10/push-v3", 2, 0),
    ("metaworld:MT10/drawer-open-v3", 5, 1),
]


def main() -> None:
    for ref, episode, seed in CASES:
        result = backend_parity(compile_task(ref), "warp", episode, 100, seed, device="cpu")
        line = {"ref": ref, "episode": episode, "seed": seed, **result.summary()}
        print(json.dumps(line, default=str), flush=True)


if __name__ == "__main__":
    main()
