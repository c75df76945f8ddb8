"""What the LIBERO peer-code convention tests share (LeRobot's `LiberoEnv`, openpi's
`main.py`): a metasim env put at a peer harness's episode start, and whether the robot
touches anything (after a contact MuJoCo 3.17 and 4.0 part: test_observation_instant.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.libero.importer.init_states import InitStateMap
from metasim.scene.compile import ROBOT_PREFIX, CompiledScene
from metasim.sim.base import ModelEdit

STATE_TOL = 1e-6
PSNR_DB = 40.0
SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10")
SAMPLE = [("libero_spatial", 3), ("libero_object", 6), ("libero_goal", 2), ("libero_10", 5)]
ALL = [(s, i) for s in SUITES for i in range(10)]
# KITCHEN_SCENE8's stove starts on: LIBERO draws its burner site, metasim hides sites, so
# even a static frame of the same state is 32.6 dB (docs/log/libero.md, "First frame"; the
# same strict xfail as in test_observation_instant.py). Measured here: 32.7 dB agentview,
# 26.3 dB wrist, with state, prompt and action path equal.
BURNER = {("libero_10", 8)}


def every_task() -> list[object]:
    """The 40 tasks of the four suites as pytest parameters (suite, task), BURNER's a
    strict xfail; ids `suite-task`."""
    burner = pytest.mark.xfail(strict=True, reason="the stove's burner site: 32.6 dB")
    return [
        pytest.param(s, i, marks=burner, id=f"{s}-{i}")
        if (s, i) in BURNER
        else pytest.param(s, i, id=f"{s}-{i}")
        for s, i in ALL
    ]


def sync_start(
    env: MetasimVectorEnv,
    mapping: InitStateMap,
    fixtures: dict[str, str],
    bodies: Sequence[str],
    body_pose: tuple[np.ndarray, np.ndarray],
    init: tuple[np.ndarray, np.ndarray],
) -> None:
    """Env 0 at the peer's start: each fixture (instance -> the peer's root body name,
    `bodies` the peer's body names by id) at the peer's body pose (`body_pose`: xpos
    (nbody, 3), xquat (nbody, 4)), then the peer's init qpos (nq,) and qvel (nv,) in
    LIBERO's joint layout."""
    model = env.compiled.model
    for inst, root in fixtures.items():
        i, b = list(bodies).index(root), model.body(inst).id
        env.handler.apply(ModelEdit("body_pos", b, body_pose[0][i][None]))
        env.handler.apply(ModelEdit("body_quat", b, body_pose[1][i][None]))
    state = env.handler.get_state()
    state.qpos[0, mapping.qpos_index] = init[0]
    state.qvel[0, mapping.qvel_index] = init[1]
    env.handler.set_state(state)


class Touch:
    """Whether env 0's robot touches anything (its fingers each other excepted); the env
    must track contacts (`env.handler.track_contacts = True`)."""

    def __init__(self, compiled: CompiledScene) -> None:
        model = compiled.model
        names = [model.body(b).name for b in model.geom_bodyid]
        self.robot = np.array([n.startswith(ROBOT_PREFIX) for n in names])
        self.finger = np.array(["finger" in n for n in names]) & self.robot

    def __call__(self, env: MetasimVectorEnv) -> bool:
        pairs = env.handler.contacts()[0]
        if not len(pairs):
            return False
        robot, finger = self.robot[pairs], self.finger[pairs]
        return bool((robot.any(axis=1) & ~finger.all(axis=1)).any())
