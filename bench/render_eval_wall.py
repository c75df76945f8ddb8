"""Wall time of `metasim eval` under render=opengl, render=warp (2x2) and render_spp=1.

    PYTHONPATH=. MUJOCO_GL=egl python bench/render_eval_wall.py OUT libero:libero_goal/3
    PYTHONPATH=. MUJOCO_GL=egl python bench/render_eval_wall.py OUT metaworld:MT10/reach-v3

The policy is the image-consuming probe of tests/evaluate/test_render_eval.py (both
cameras rendered at --size and read every request; actions independent of the pixels;
each episode stopped after --calls requests of 4 actions), 4 envs x 4 episodes, the same
episodes under each renderer, one run each. Prints the wall times as JSON and checks that
the robot states sent to the policy were identical across the runs (the same physics).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from metasim.evaluate.config import EvalConfig
from metasim.evaluate.runner import run_eval

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "evaluate"))
import test_render_eval as probe  # the probe policy lives with its test


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("ref", choices=sorted(probe.POLICIES))
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--calls", type=int, default=10)
    args = p.parse_args()
    probe.CALLS = args.calls
    spec = probe.POLICIES[args.ref]
    images = {
        key: {"camera": v["camera"], "render": [args.size] * 2, "size": [64, 64]}
        for key, v in spec["observation"]["images"].items()
    }
    walls, logs = {}, {}
    for render, spp in (("opengl", None), ("warp", None), ("warp", 1)):
        name = f"{render}-spp{spp or 'default'}"
        log = args.out / f"{name}.jsonl"
        os.environ[probe.LOG] = str(log)
        policy = {
            "kind": "python",
            "target": "test_render_eval:ImageProbe",
            "args": {"dim": spec["dim"], "images": list(images)},
            "observation": {**spec["observation"], "images": images},
            "actions": spec["actions"],
            "execute": 4,
        }
        cfg = EvalConfig.model_validate(
            {"suite": {"name": "probe", "tasks": [args.ref]}, "policy": policy,
             "episodes": 4, "num_envs": 4, "render": render, "render_spp": spp,
             "out": str(args.out / name)}
        )  # fmt: skip
        t0 = time.perf_counter()
        run_eval(cfg)
        walls[name] = round(time.perf_counter() - t0, 1)
        logs[name] = [json.loads(line)["state"] for line in log.read_text().splitlines()]
    same = all(states == logs["opengl-sppdefault"] for states in logs.values())
    print(json.dumps({"ref": args.ref, "size": args.size, "wall_s": walls, "same_physics": same}))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
