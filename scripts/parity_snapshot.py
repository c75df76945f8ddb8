"""Per-step hashes of native trajectories, to show a change to the stepping code changes no bit.

    PYTHONPATH=$PWD nice -n 10 .venv/bin/python scripts/parity_snapshot.py --out before.json
    (change the code)
    PYTHONPATH=$PWD nice -n 10 .venv/bin/python scripts/parity_snapshot.py --out after.json \
        --compare before.json

Each case steps a task's vector env on the native backend with fixed seeded actions and
records, per control step, a SHA-256 of the full state (`get_state`), of every
observation array, of the kinematics at each step instant, of the end-effector Jacobian,
of each env's contacts (tasks that test touching) and, every `--frame-every` steps, of a
small frame of the observation instant. The cases cover every stepping path of the native
handler: LIBERO (osc_pose every substep, the observation instant at substep 24 of 25,
contacts, per-env fixture edits) at 1 and 2 envs, Meta-World (the legacy weld aref, mocap
actions) at 2 envs on 2 threads, and the tabletop lift with and without a per-env
physics edit. `--compare` exits 1 naming the first step where a hash differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.sim.base import INSTANTS, ModelEdit

# (name, task, num_envs, nthread, per-env gravity edit)
CASES: tuple[tuple[str, str, int, int, bool], ...] = (
    ("libero_10_0_x1", "libero:libero_10/0", 1, 1, False),
    ("libero_10_2_x1", "libero:libero_10/2", 1, 1, False),
    ("libero_10_2_x2", "libero:libero_10/2", 2, 2, False),
    ("libero_10_8_x2", "libero:libero_10/8", 2, 2, False),
    ("metaworld_reach_x2", "metaworld:reach-v3", 2, 2, False),
    ("metaworld_pick_place_x2", "metaworld:pick-place-v3", 2, 2, False),
    ("lift_cube_x2", "lift_cube", 2, 2, False),
    ("lift_cube_edited_x2", "lift_cube", 2, 2, True),
)


def digest(*arrays: Any) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a))
        h.update(str((a.dtype, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _obs_hash(obs: Any) -> str:
    if isinstance(obs, dict):
        return digest(*(np.asarray(_flat(obs[k])) for k in sorted(obs)))
    return digest(obs)


def _flat(value: Any) -> Any:
    if isinstance(value, dict):
        return np.concatenate([np.ravel(_flat(value[k])) for k in sorted(value)] or [[]])
    return value


def run_case(task: str, num_envs: int, nthread: int, edited: bool, steps: int, every: int):
    env = MetasimVectorEnv(task, num_envs=num_envs, nthread=nthread, seed=0)
    h = env.handler
    rows: list[dict[str, str]] = []
    try:
        env.reset(seed=0)
        if edited:
            g = np.array([[0.0, 0.0, -9.81], [0.0, 0.3, -9.5]])[:num_envs]
            h.apply(ModelEdit("gravity", 0, g))
        space = env.single_action_space
        low, high = np.asarray(space.low), np.asarray(space.high)
        rng = np.random.default_rng(7)
        site = env.compiled.index.ee_site
        for t in range(steps):
            action = rng.uniform(low, high, size=(num_envs, *low.shape)) * 0.5
            obs, reward, terminated, truncated, _ = env.step(action)
            s = h.get_state()
            fields = (s.time, s.qpos, s.qvel, s.act, s.ctrl, s.qacc_warmstart)
            row = {
                "state": digest(*fields, s.mocap_pos, s.mocap_quat),
                "obs": _obs_hash(obs),
                "reward": digest(reward, terminated, truncated),
                "jac": digest(h.site_jacobian(site)),
            }
            for at in INSTANTS:
                k = h.kinematics(at=at)
                row[at] = digest(k.qpos, k.qvel, k.body_pos, k.body_quat, k.site_pos, k.site_mat)
            if h.track_contacts:
                row["contacts"] = digest(*h.contacts())
            if every and t % every == 0:
                cam = env.compiled.model.camera(0).name if env.compiled.model.ncam else None
                if cam is not None and not env.compiled.untextured:
                    row["frame"] = digest(h.render(cam, width=64, height=48, observed=True))
            rows.append(row)
    finally:
        env.close()
    return rows


def compare(now: dict[str, Any], before: dict[str, Any]) -> int:
    bad = 0
    for name, rows in before.items():
        if name not in now:
            print(f"{name}: missing now")
            bad += 1
            continue
        for t, (a, b) in enumerate(zip(rows, now[name], strict=True)):
            if a != b:
                keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
                print(f"{name}: step {t} differs in {keys}")
                bad += 1
                break
        else:
            print(f"{name}: {len(rows)} steps identical")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--frame-every", type=int, default=10)
    p.add_argument("--only", nargs="*", default=None, help="case names to run")
    p.add_argument("--compare", type=Path, default=None, help="a JSON written before")
    args = p.parse_args(argv)
    out: dict[str, Any] = {}
    for name, task, n, threads, edited in CASES:
        if args.only and name not in args.only:
            continue
        out[name] = run_case(task, n, threads, edited, args.steps, args.frame_every)
        print(f"{name}: {len(out[name])} steps", flush=True)
    args.out.write_text(json.dumps(out, indent=1))
    if args.compare is not None:
        return compare(out, json.loads(args.compare.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
