"""Where metasim's and the package's episodes of `policy=metaworld_expert` part, by a
control experiment: run the expert in metasim (episode k = variation k), then replay
metasim's own actions in the package from the same reset (`MetaWorldRef.rollout`) and
compare, step by step, the 39-D observation metasim built for the expert with the
package's own observation after the same actions.

    PYTHONPATH=$PWD .venv/bin/python scripts/metaworld_divergence.py peg-insert-side-v3 0 [MT50]

Prints one JSON line per episode: metasim's first success, the package's success on
metasim's actions, the first step where the hand (obs[0:3]) or an object position
(obs[4:7], obs[11:14]) differs by more than 1 mm, the first step with a robot contact in
the package's replay and which contacts it had then, and the largest observation
difference before that contact.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.metaworld.expert import Observer
from metasim.metaworld.reference.simulator import MetaWorldRef
from metasim.scene.sources import compile_task

MM = 1e-3


def metasim_episode(ref: MetaWorldRef, task: str, bench: str, k: int) -> dict[str, Any]:
    """The expert in metasim: observations (T, 39) it was given, actions (T, 4), success
    per step (T,)."""
    prefix = "" if bench == "MT50" else f"{bench}/"
    env = MetasimVectorEnv(
        compile_task(f"metaworld:{prefix}{task}"), num_envs=1, action_space="mocap_delta",
        autoreset=False,
    )  # fmt: skip
    observer, rows, acts, wins = Observer(task, 1), [], [], []
    try:
        obs, _ = env.reset(options={"env_ids": np.arange(1), "seeds": [k], "episodes": [k]})
        observer.reset(np.arange(1))
        for _ in range(500):
            o = observer.observe(obs["privileged"])
            a = ref.expert_actions(task, o)
            obs, _, term, trunc, _ = env.step(a)
            rows.append(o[0])
            acts.append(a[0])
            wins.append(bool(term[0]))
            if term[0] or trunc[0]:
                break
    finally:
        env.close()
    return {"obs": np.array(rows), "actions": np.array(acts), "success": np.array(wins)}


def first(mask: np.ndarray) -> int | None:
    """1-based index of the first True, None when none."""
    hits = np.flatnonzero(mask)
    return int(hits[0]) + 1 if len(hits) else None


def diverge(ref: MetaWorldRef, task: str, bench: str, k: int) -> dict[str, Any]:
    ours = metasim_episode(ref, task, bench, k)
    pkg = ref.rollout(task, ours["actions"], benchmark=bench, variation=k)
    theirs = np.asarray(pkg["obs"])[: len(ours["obs"])]  # row t: after t steps
    hand = np.abs(ours["obs"][:, 0:3] - theirs[:, 0:3]).max(axis=1)
    objs = np.abs(ours["obs"][:, [4, 5, 6, 11, 12, 13]] - theirs[:, [4, 5, 6, 11, 12, 13]])
    touch = first(np.asarray(pkg["contact"]))
    before = slice(0, touch or len(hand))
    return {
        "task": task,
        "episode": k,
        "metasim_success": first(ours["success"]),
        "package_success_on_metasim_actions": first(np.asarray(pkg["success"])),
        "hand_over_1mm": first(hand > MM),
        "object_over_1mm": first(objs.max(axis=1) > MM),
        "first_contact": touch,
        "contacts_then": pkg["contacts"][touch - 1] if touch else [],
        "max_obs_diff_before_contact": float(np.abs(ours["obs"] - theirs)[before].max()),
        "steps": len(ours["obs"]),
    }


if __name__ == "__main__":
    name, episodes = sys.argv[1], [int(x) for x in sys.argv[2].split(",")]
    benchmark = sys.argv[3] if len(sys.argv) > 3 else "MT50"
    with MetaWorldRef() as mw:
        for ep in episodes:
            print(json.dumps(diverge(mw, name, benchmark, ep)), flush=True)
