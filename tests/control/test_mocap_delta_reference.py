"""`mocap_delta` against the metaworld package itself (3.1.1 in its reference venv): the
same 4-D actions move metasim's mocap target through exactly the positions the package's
`SawyerXYZEnv.step` writes to `data.mocap_pos` (bit for bit, walls of the task's box
included), and give exactly the finger ctrl its `do_simulation([a, -a])` writes. The
mocap walk depends only on the actions, the scale and the box, so the test gripper
(tests/data/mocap_robot) with reach-v3's box stands in for the Sawyer."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.scene import compile_file
from tests.lanes import needs

pytestmark = pytest.mark.reference

DATA = Path(__file__).resolve().parents[1] / "data/mocap_robot"
STEPS = 80

# Run inside the reference venv: reach-v3, variation 0, then STEPS actions (float64, past
# [-1, 1] now and then, pushed toward the box's -z and +x walls); print what it wrote.
REFERENCE = """
import json, sys
import numpy as np
import metaworld

mt1 = metaworld.MT1("reach-v3", seed=0)
env = mt1.train_classes["reach-v3"]()
env.set_task(mt1.train_tasks[0])
env.reset()
rng = np.random.default_rng(0)
actions = rng.uniform(-1.6, 1.6, (int(sys.argv[1]), 4)) + np.array([0.8, 0.0, -0.9, 0.0])
out = {"start": env.data.mocap_pos[0].tolist(), "low": env.mocap_low.tolist(),
       "high": env.mocap_high.tolist(), "scale": env.action_scale,
       "actions": actions.tolist(), "mocap": [], "quat": [], "ctrl": []}
for a in actions:
    env.step(a)
    out["mocap"].append(env.data.mocap_pos[0].tolist())
    out["quat"].append(env.data.mocap_quat[0].tolist())
    out["ctrl"].append(env.data.ctrl.tolist())
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
@needs("reference")
def reference() -> dict:
    from metasim.metaworld.reference.simulator import MetaWorldRefError, ensure_venv

    try:
        python = ensure_venv()
    except MetaWorldRefError as exc:
        pytest.skip(f"cannot build the Meta-World reference venv (offline?): {exc}")
    done = subprocess.run(
        [str(python), "-c", REFERENCE, str(STEPS)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # json floats round-trip


def test_mocap_walk_and_finger_ctrl_equal_the_package(reference, tmp_path):
    ref = reference
    robot = (DATA / "robot.yaml").read_text()
    robot = robot.replace("low: [-0.2, 0.45, 0.1]", f"low: {ref['low']}")
    robot = robot.replace("high: [0.2, 0.75, 0.3]", f"high: {ref['high']}")
    robot = robot.replace("scale: 0.01", f"scale: {ref['scale']!r}")
    (tmp_path / "robot.yaml").write_text(robot.replace("robot.xml", str(DATA / "robot.xml")))
    (tmp_path / "scene.yaml").write_text((DATA / "scene.yaml").read_text())
    scene = compile_file(tmp_path / "scene.yaml")
    env = MetasimVectorEnv(scene, 1, action_space="mocap_delta", autoreset=False)
    env.reset(seed=0)
    state = env.handler.get_state()
    state.mocap_pos[0, 0] = ref["start"]  # where the package's reset left its mocap
    env.handler.set_state(state)
    gripper = [scene.model.actuator(f"robot/{n}").id for n in ("r_close", "l_close")]
    mocap = np.array(ref["mocap"])
    low = np.array(ref["low"])
    assert (mocap[:, 2] == low[2]).any()  # the walk reached the box's floor
    for k, action in enumerate(np.array(ref["actions"])):
        env.step(action[None])
        now = env.handler.get_state()
        np.testing.assert_array_equal(now.mocap_pos[0, 0], mocap[k], err_msg=f"step {k}")
        np.testing.assert_array_equal(now.mocap_quat[0, 0], ref["quat"][k])
        np.testing.assert_array_equal(now.ctrl[0, gripper], ref["ctrl"][k])
