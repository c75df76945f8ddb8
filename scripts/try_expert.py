import sys
import time

import numpy as np

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.policies.base import PolicyContext, make_policy

scene = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 8
E = int(sys.argv[3]) if len(sys.argv) > 3 else N
env = MetasimVectorEnv(scene, num_envs=N, seed=0)
ctx = PolicyContext(
    env.compiled,
    N,
    "ee_delta",
    env.object_names,
    env.fixture_bodies,
    env.fixture_sites,
    env.compiled.control_dt,
)
pol = make_policy("scripted", ctx)
obs, _ = env.reset(seed=0)
pol.reset("")
done = 0
succ = 0
lens = []
t = time.time()
steps = 0
fails = []
while done < E:
    a = pol.act(obs)[:, 0]
    obs, r, te, tr, ex = env.step(a)
    steps += 1
    if "episode" in ex:
        e = ex["episode"]
        ids = e["env_ids"]
        pol.reset("", ids)
        for j, i in enumerate(ids):
            if done < E:
                done += 1
                succ += int(e["success"][j])
                lens.append(int(e["length"][j]))
                if not e["success"][j]:
                    fails.append((int(e["seed"][j]), float(e["progress"][j]), int(pol.phase[i])))
print(
    scene,
    f"success {succ}/{done}",
    "mean len",
    np.mean(lens),
    f"{time.time() - t:.1f}s",
    steps * N / (time.time() - t),
    "env-steps/s",
)
print("fails (seed, progress):", fails[:10])
