"""Ground truth for metasim's Meta-World success and observation functions: runs INSIDE
the reference venv (.cache/metaworld-ref: metaworld 3.1.1 on MuJoCo 3.3.0) as a script,
never in metasim's process, and must not import metasim.

    .cache/metaworld-ref/bin/python metasim/metaworld/reference/semantics_probe.py \
        OUT_DIR --tasks reach-v3,stick-push-v3 --episodes 3 --steps 150 --seed 0

For each task (all 50 of MT50 with `--tasks all`), builds the package's MT1 benchmark
(`metaworld.MT1(task, seed)`: the goal is observable, as in every MT benchmark), and runs
`--episodes` episodes, episode k on variation k, in the package's own loop (set_task,
reset, step). Episode k's actions: k % 3 == 0 the package's scripted policy, 1 the
policy plus Gaussian noise (sd 0.5), 2 a smooth random walk (all seeded by `--seed`).

Writes OUT_DIR/probe.json (per episode: task, xml path, `_target_pos`, goal space,
`stick_init_pos` where the task has one, and the model fields the reset changed, by
element name, against a fresh compile of the same XML) and OUT_DIR/probe.npz (per episode
"<task>/<k>/<field>", rows = the reset state then every step: qpos, qvel, mocap_pos,
mocap_quat, ctrl, qacc_warmstart, obs (39), success (-1 on the reset row, which the
package does not evaluate, else info["success"]); and "<task>/<k>/model_<field>" the
whole of the model's body/site/geom pos and quat after the reset).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import numpy as np

# Model fields a task's reset may write (fixture bodies, the goal site, the mocap weld).
EDITABLE = {
    "body_pos": "body",
    "body_quat": "body",
    "site_pos": "site",
    "site_quat": "site",
    "geom_pos": "geom",
    "geom_quat": "geom",
    "eq_data": "equality",
}


def model_edits(env: Any) -> list[dict[str, Any]]:
    """Rows of EDITABLE fields where the env's model differs from a fresh compile:
    [{"field", "name" (element name, or "#<id>" when unnamed), "value"}]."""
    import mujoco

    fresh = mujoco.MjModel.from_xml_path(env.model_name)
    out = []
    for field, kind in EDITABLE.items():
        now, before = getattr(env.model, field), getattr(fresh, field)
        for i in np.flatnonzero(np.any(now != before, axis=1)):
            obj = getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}")
            name = mujoco.mj_id2name(env.model, obj, int(i)) or f"#{int(i)}"
            out.append({"field": field, "name": name, "value": now[i].tolist()})
    return out


# Model fields recorded whole after reset, so that a replay can use the reference's
# compiled model values (MuJoCo versions compile some, e.g. mesh geoms' frames, apart).
WHOLE = ("body_pos", "body_quat", "site_pos", "site_quat", "geom_pos", "geom_quat")


def snapshot(env: Any) -> dict[str, np.ndarray]:
    d = env.data
    return {
        "qpos": d.qpos.copy(),
        "qvel": d.qvel.copy(),
        "mocap_pos": d.mocap_pos.copy(),
        "mocap_quat": d.mocap_quat.copy(),
        "ctrl": d.ctrl.copy(),
        "qacc_warmstart": d.qacc_warmstart.copy(),
    }


class Actor:
    """Episode k's action source (see the module docstring)."""

    def __init__(self, task: str, mode: int, rng: np.random.Generator) -> None:
        from metaworld.policies import ENV_POLICY_MAP

        self.policy = ENV_POLICY_MAP[task]()
        self.mode, self.rng = mode, rng
        self.walk: np.ndarray = np.zeros(4)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        if self.mode == 2:
            self.walk = np.clip(0.85 * self.walk + 0.5 * self.rng.uniform(-1, 1, 4), -1, 1)
            return self.walk.astype(np.float32)
        act = np.asarray(self.policy.get_action(obs), dtype=np.float64)
        if self.mode == 1:
            act = act + self.rng.normal(0.0, 0.5, 4)
        return np.clip(act, -1, 1).astype(np.float32)


def episode(env: Any, actor: Actor, steps: int) -> dict[str, np.ndarray]:
    rows = []
    obs, _ = env.reset()
    rows.append({**snapshot(env), "obs": obs.copy(), "success": np.int8(-1)})
    for _ in range(steps):
        obs, _, _, truncated, info = env.step(actor(obs))
        rows.append({**snapshot(env), "obs": obs.copy(), "success": np.int8(info["success"])})
        if truncated:
            break
    return {k: np.stack([r[k] for r in rows]) for k in rows[0]}


def episode_meta(env: Any, task: str, k: int) -> dict[str, Any]:
    space = env.sawyer_observation_space
    meta = {
        "task": task,
        "episode": k,
        "xml": os.path.abspath(env.model_name),
        "target": np.asarray(env._target_pos, dtype=np.float64).tolist(),
        "goal_low": space.low[36:39].tolist(),
        "goal_high": space.high[36:39].tolist(),
        "hand_low": space.low[0:3].tolist(),
        "hand_high": space.high[0:3].tolist(),
        "partially_observable": bool(env._partially_observable),
        "edits": model_edits(env),
    }
    if getattr(env, "stick_init_pos", None) is not None:
        meta["stick_init_pos"] = np.asarray(env.stick_init_pos, dtype=np.float64).tolist()
    return meta


def probe_task(task: str, episodes: int, steps: int, seed: int) -> list[tuple[dict, dict]]:
    import metaworld

    bench = metaworld.MT1(task, seed=seed)
    out = []
    for k in range(episodes):
        env = bench.train_classes[task]()
        try:
            env.set_task(bench.train_tasks[k])
            env.seed(seed + k)
            actor = Actor(task, k % 3, np.random.default_rng([seed, k]))
            arrays = episode(env, actor, steps)
            arrays.update({f"model_{f}": getattr(env.model, f).copy() for f in WHOLE})
            out.append((episode_meta(env, task, k), arrays))
        finally:
            env.close()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--tasks", default="all", help="comma-separated env names, or all")
    ap.add_argument("--episodes", type=int, default=3)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    from metaworld.env_dict import MT50_V3

    names = list(MT50_V3) if args.tasks == "all" else None
    tasks = names or [t for t in args.tasks.split(",") if t]
    metas, arrays = [], {}
    for task in tasks:
        for meta, arr in probe_task(task, args.episodes, args.steps, args.seed):
            metas.append(meta)
            arrays.update({f"{task}/{meta['episode']}/{k}": v for k, v in arr.items()})
    os.makedirs(args.out_dir, exist_ok=True)
    np.savez(os.path.join(args.out_dir, "probe.npz"), **arrays)
    with open(os.path.join(args.out_dir, "probe.json"), "w", encoding="utf-8") as f:
        json.dump(metas, f)
    print(f"{len(metas)} episodes of {len(tasks)} tasks", file=sys.stderr)


if __name__ == "__main__":
    main()
