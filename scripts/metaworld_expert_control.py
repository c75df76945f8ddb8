"""Why does the scripted expert's outcome differ between metasim and the package on some
tasks (peg-insert-side-v3 variation 0: first success at step 368 in metasim, 81 in the
package)? The control experiment of `metasim check parity --benchmark metaworld`, applied
to the expert:

1. metasim runs the expert closed loop (`policy=metaworld_expert`) and records its
   actions and its first success;
2. the same actions are replayed open loop on the package's own task XML compiled raw
   in metasim's MuJoCo 4 (`checks.parity_raw`, driven as the package drives it): when
   that run equals metasim's, metasim's outcome is MuJoCo 4's outcome for the package's
   model, i.e. the import is not the cause;
3. the same actions are replayed in the package (`MetaWorldRef.rollout`, MuJoCo 3.3.0):
   where it parts from metasim, which robot contact precedes it, and its own successes;
4. the package's expert closed loop (`MetaWorldRef.expert`): its first success.

    PYTHONPATH=$PWD .venv/bin/python scripts/metaworld_expert_control.py \
        peg-insert-side-v3:0 door-open-v3:1 drawer-close-v3:2
"""

from __future__ import annotations

import sys

import numpy as np

import metasim.metaworld  # noqa: F401  (registers the plug-in)
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.metaworld.checks.parity import EEF_TARGET_M, OBJECT_TARGET_M
from metasim.metaworld.checks.parity_raw import run_raw
from metasim.metaworld.expert import MetaworldExpert
from metasim.metaworld.reference.init_states import init_states
from metasim.metaworld.reference.simulator import MetaWorldRef
from metasim.policies.base import PolicyContext

HORIZON = 500


def metasim_expert(task: str, k: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(actions (T, 4), tool centre (T+1, 3), first success step or 0) of metasim's expert
    on episode k, run until its first success (or the horizon)."""
    env = MetasimVectorEnv(f"metaworld:{task}", num_envs=1, action_space="mocap_delta",
                           autoreset=False)  # fmt: skip
    pol = MetaworldExpert(PolicyContext.of(env.compiled, 1, "mocap_delta"))
    try:
        obs, _ = env.reset(options={"env_ids": [0], "seeds": [0], "episodes": [k]})
        pol.reset("")
        m, h = env.compiled.model, env.handler
        sites = [m.site("robot/rightEndEffector").id, m.site("robot/leftEndEffector").id]
        tcp, acts, first = [h.kinematics().site_pos[0, sites].mean(axis=0).copy()], [], 0
        for t in range(HORIZON):
            a = np.asarray(pol.act(obs))[:, 0]
            obs, _, _, _, extras = env.step(a)
            acts.append(a[0].copy())
            tcp.append(h.kinematics().site_pos[0, sites].mean(axis=0).copy())
            if bool(extras["success"][0]):
                first = t + 1
                break
    finally:
        pol.close()
        env.close()
    return np.array(acts), np.array(tcp), first


def parting(a: np.ndarray, b: np.ndarray, oa: np.ndarray, ob: np.ndarray) -> int:
    """First row where tool centres part by > 1 mm or an object by > 2 mm (0: never)."""
    over = np.linalg.norm(a - b, axis=-1) > EEF_TARGET_M
    if oa.size:
        over |= np.linalg.norm(oa - ob, axis=-1).max(axis=1) > OBJECT_TARGET_M
    return int(np.argmax(over)) if over.any() else 0


def investigate(ref: MetaWorldRef, task: str, k: int) -> None:
    acts, tcp, first = metasim_expert(task, k)
    states = init_states(task, "MT50", "train", 0, range(50), ref=ref)
    raw = run_raw(task, states, k, acts)
    theirs = ref.rollout(task, acts, variation=k)
    ref_tcp, ref_obj = np.asarray(theirs["tcp_center"]), np.asarray(theirs["object_pos"])
    part = parting(tcp, ref_tcp, raw.objects, ref_obj)
    contacts = theirs["contacts"]
    before = next((contacts[t - 1][0] for t in range(part, 0, -1) if contacts[t - 1]), [])
    ref_success = np.flatnonzero(np.asarray(theirs["success"]))
    own = ref.expert("MT50", task, k, until_success=True)
    first_contact = int(np.argmax(theirs["contact"])) + 1 if np.any(theirs["contact"]) else 0
    print(
        f"{task} v{k}: metasim expert first success {first or 'none'} ({len(acts)} steps); "
        f"raw-XML MuJoCo 4 replay vs metasim: max {np.abs(raw.tcp_center - tcp).max():.1e} m; "
        f"package replay of metasim's actions: first robot contact step {first_contact}, "
        f"parts (>1 mm eef / >2 mm object) at step {part or 'never'} after {before or '-'}, "
        f"successes at {(ref_success[:3] + 1).tolist() if ref_success.size else 'none'}; "
        f"package's own expert: first success {own['steps'] or 'none'}",
        flush=True,
    )


def main(argv: list[str]) -> None:
    with MetaWorldRef() as ref:
        for item in argv or ["peg-insert-side-v3:0"]:
            task, _, k = item.partition(":")
            investigate(ref, task, int(k or 0))


if __name__ == "__main__":
    main(sys.argv[1:])
