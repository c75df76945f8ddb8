"""Meta-World's observation terms (privileged; they exist only in Meta-World scenes):

- `metaworld_frame` (B, 18): the package's observation frame of the current state: hand
  (tcp_center), gripper distance, up to two objects' position and quaternion;
- `metaworld_reset_frame` (B, 18): the frame the package's reset returned for the
  episode's variation (recorded with its initial state);
- `metaworld_goal` (B, 3): the episode's `_target_pos`, or zeros in a scene of an ML
  benchmark (`partially_observable`), as the package's observation shows it there (the
  target site itself stays simulator state, in `fixture_site_pos`);
- `metaworld_agent_pos` (B, 4), a `policy` term (a state part of policy presets): the
  hand and the gripper distance, observation[0:4] as the package's `step` returns it
  (clipped to the hand box and [-1, 1]), and in an episode's first observation as `reset`
  returns it (the recorded reset frame, unclipped): what LeRobot's Meta-World env feeds
  policies as `agent_pos` -> `observation.state` (`policies/lerobot_metaworld.yaml`).

A policy that reads the package's 39-D observation (its scripted policies, a checkpoint
trained on it) builds it from these (`metasim.metaworld.expert.Observer`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from metasim.envs.terms import OBS_TERMS, Layout, ObsTerm
from metasim.metaworld.kinds import MetaworldWorld
from metasim.metaworld.state import WORLD_PREFIX
from metasim.scene.schema import Scene
from metasim.sim.base import Kinematics


def world_of(scene: Scene) -> MetaworldWorld | None:
    """The scene's `metaworld_world` fixture, if it is a Meta-World task."""
    return next((fx for fx in scene.fixtures if isinstance(fx, MetaworldWorld)), None)


def task_of(layout: Layout) -> str | None:
    """The Meta-World task of the layout's scene (its `metaworld_world` fixture), if any."""
    world = world_of(layout.compiled.scene)
    return world.task if world is not None else None


def _goal(layout: Layout) -> Callable[[Kinematics], np.ndarray]:
    """The episode's goal, or zeros where the scene hides it (`partially_observable`),
    as the package's observation[36:39]."""
    world = world_of(layout.compiled.scene)
    if world is not None and world.partially_observable:
        return lambda kin: np.zeros((kin.site_pos.shape[0], 3))
    return _sites(_target_site)(layout)


def _site_ids(layout: Layout, names: list[str]) -> np.ndarray:
    return np.array([layout.compiled.model.site(WORLD_PREFIX + n).id for n in names])


def _frame(layout: Layout) -> Callable[[Kinematics], np.ndarray]:
    from metasim.metaworld.importer.model import TARGET_SITE
    from metasim.metaworld.obs import frame
    from metasim.metaworld.state import MwState

    task, model = task_of(layout), layout.compiled.model
    assert task is not None
    target = int(_site_ids(layout, [TARGET_SITE])[0])
    return lambda kin: frame(task, MwState(model, kin, kin.site_pos[:, target]))


def _agent_pos(layout: Layout) -> Callable[[Kinematics], np.ndarray]:
    from metasim.metaworld.obs import HAND_HIGH, HAND_LOW

    full = _frame(layout)
    low, high = np.append(HAND_LOW, -1.0), np.append(HAND_HIGH, 1.0)
    return lambda kin: np.clip(full(kin)[:, :4], low, high)


def _agent_pos_at_reset(layout: Layout) -> Callable[[Kinematics], np.ndarray]:
    """obs[0:4] as the package's `reset` returns it: its recorded reset frame, unclipped
    (in 7 tasks read before reset's last kinematics, `obs.RESET_FRAME_STALE`: up to
    0.3 mm from the reset state's hand; LeRobot's env feeds that value)."""
    frame = _sites(_reset_sites)(layout)
    return lambda kin: frame(kin)[:, :4]


def _sites(
    names: Callable[[], list[str]],
) -> Callable[[Layout], Callable[[Kinematics], np.ndarray]]:
    def make(layout: Layout) -> Callable[[Kinematics], np.ndarray]:
        ids = _site_ids(layout, names())
        return lambda kin: kin.site_pos[:, ids].reshape(kin.site_pos.shape[0], -1)

    return make


def _reset_sites() -> list[str]:
    from metasim.metaworld.importer.model import reset_frame_sites

    return reset_frame_sites()


def _target_site() -> list[str]:
    from metasim.metaworld.importer.model import TARGET_SITE

    return [TARGET_SITE]


def _applies(layout: Layout) -> bool:
    return task_of(layout) is not None


OBS_TERMS.register(
    "metaworld_frame",
    ObsTerm("privileged", lambda lay: (18,), make=_frame, noise=True, applies=_applies),
)
OBS_TERMS.register(
    "metaworld_reset_frame",
    ObsTerm("privileged", lambda lay: (18,), make=_sites(_reset_sites), applies=_applies),
)
OBS_TERMS.register(
    "metaworld_goal",
    ObsTerm("privileged", lambda lay: (3,), make=_goal, applies=_applies),
)
OBS_TERMS.register(
    "metaworld_agent_pos",
    ObsTerm(
        "policy", lambda lay: (4,), make=_agent_pos, applies=_applies, reset=_agent_pos_at_reset
    ),
)
