"""Meta-World's 39-D observation, as the package's `SawyerXYZEnv` builds it (what its
scripted policies and LeRobot's Meta-World policies read), batched over envs:

    [0:3]   the `hand` body's position
    [3]     the claws' distance apart / 0.1, clipped to [0, 1]
    [4:18]  the task's objects, (position 3, quaternion 4) each, zero-padded (`objects`)
    [18:36] the previous step's [0:18] (at reset: the current one)
    [36:39] the goal (`_target_pos`): zeros when the env is partially observable

`step` then clips the whole vector to the observation space: [0:3] and [18:21] to the
hand box `HAND_LOW`..`HAND_HIGH`, [3] and [21] to [-1, 1], the goal to the task's
`goal_space` (`GOAL_SPACE`; the target can lie outside it, e.g. box-close's); `reset`
returns it unclipped. The frame stored as "previous" is the unclipped one.

Partial observability: every MT benchmark (MT1/MT10/MT25/MT50) sets
`partially_observable=False` (goal shown), every ML benchmark True (goal zeroed, its
space [0, 0]). The package's scripted policies read the goal from [36:39] (19 of them),
so they fail on ML tasks that need it, in the package and in metasim alike: a scene of an
ML benchmark's task is `partially_observable` (its `metaworld_world` fixture), and its
`metaworld_goal` term and `metaworld_expert`'s observation hide the goal. LeRobot's
Meta-World env builds MT1 tasks (goal shown) and feeds policies [0:4] as `agent_pos`.
"""

from __future__ import annotations

import numpy as np

from metasim.metaworld.goal_space import GOAL_SPACE
from metasim.metaworld.objects import OBJECTS
from metasim.metaworld.state import MwState
from metasim.registry import UnknownName

FRAME = 18  # observation[0:18]: one frame (hand, gripper, objects)
OBS_DIM = 39
HAND_LOW = np.array([-0.525, 0.348, -0.0525])
HAND_HIGH = np.array([0.525, 1.025, 0.7])
# Tasks whose reset observation the package reads before the reset's last kinematics
# (measured against the package on 3 variations each; see `PrevFrames`): window-close
# sets the window's slide joint and body after the last forward (0.2 m on the handle);
# the others leave positions from the start of `_reset_hand`'s last substep (<= 3e-4 m).
RESET_FRAME_STALE = frozenset(
    {
        "dial-turn-v3",
        "door-lock-v3",
        "drawer-open-v3",
        "faucet-open-v3",
        "lever-pull-v3",
        "window-close-v3",
        "window-open-v3",
    }
)


def _objects_of(task: str) -> tuple:
    if task not in OBJECTS:
        raise UnknownName(f"unknown Meta-World task {task!r}; expected one of {sorted(OBJECTS)}")
    return OBJECTS[task]


def frame(task: str, state: MwState) -> np.ndarray:
    """(B, 18) the current frame, unclipped: hand (3), gripper distance (1), objects (14)."""
    out = np.zeros((state.num_envs, FRAME))
    out[:, 0:3] = state.hand_pos()
    out[:, 3] = state.gripper_distance()
    for k, obj in enumerate(_objects_of(task)):
        out[:, 4 + 7 * k : 7 + 7 * k] = obj.pos(state)
        out[:, 7 + 7 * k : 11 + 7 * k] = obj.quat(state)
    return out


def observation(
    task: str,
    state: MwState,
    prev_frame: np.ndarray | None,
    *,
    partially_observable: bool = False,
    clip: bool = True,
) -> np.ndarray:
    """(B, 39) the observation of `state`. prev_frame (B, 18): the previous step's
    unclipped `frame` (None: the current one, as at reset). clip: as `step` returns it
    (False: as `reset` returns it). partially_observable: zero the goal (ML benchmarks)."""
    cur = frame(task, state)
    prev = cur if prev_frame is None else np.asarray(prev_frame, dtype=np.float64)
    if prev.shape != cur.shape:
        raise ValueError(f"prev_frame must be {cur.shape}, got {prev.shape}")
    goal = np.zeros((state.num_envs, 3)) if partially_observable else state.target
    obs = np.concatenate([cur, prev, goal], axis=1)
    return clip_observation(task, obs, partially_observable) if clip else obs


def clip_observation(task: str, obs: np.ndarray, partially_observable: bool = False) -> np.ndarray:
    """(B, 39) `obs` clipped to the task's observation space, as `step` clips it."""
    low, high = np.full(OBS_DIM, -np.inf), np.full(OBS_DIM, np.inf)
    for start in (0, FRAME):
        low[start : start + 3], high[start : start + 3] = HAND_LOW, HAND_HIGH
        low[start + 3], high[start + 3] = -1.0, 1.0
    glow, ghigh = GOAL_SPACE[task]
    low[36:], high[36:] = (0.0, 0.0) if partially_observable else (glow, ghigh)
    return np.clip(obs, low, high)


class PrevFrames:
    """The per-env previous-frame bookkeeping of a batch: `observe` returns each env's
    observation and keeps its frame for the next step; `reset(env_ids, frames)` marks
    envs whose next observation is a reset's: as `reset` returns it, unclipped, previous
    frame = current frame.

    The package reads its reset observation before the reset's last kinematics are
    recomputed in some tasks (after `_reset_hand`'s last `mj_step`, whose positions are
    those at the start of its last substep, or after moving a fixture body in the model:
    `RESET_FRAME_STALE`), so that frame is not a function of the reset state. Pass the
    package's own reset frame (recorded from the reference with the initial state) as
    `frames` to reproduce its first two observations exactly; without it the reset
    frame is the state's (the frame the package's next reset-free read would give)."""

    def __init__(self, task: str, num_envs: int, partially_observable: bool = False) -> None:
        _objects_of(task)
        self.task, self.partially_observable = task, partially_observable
        self.prev: np.ndarray = np.zeros((num_envs, FRAME))
        self.fresh = np.ones(num_envs, dtype=bool)
        self.given = np.zeros(num_envs, dtype=bool)

    def reset(self, env_ids: np.ndarray | list[int], frames: np.ndarray | None = None) -> None:
        """Mark `env_ids` reset; frames (len(env_ids), 18): their package reset frames."""
        ids = np.asarray(env_ids, dtype=int)
        self.fresh[ids] = True
        self.given[ids] = frames is not None
        if frames is not None:
            self.prev[ids] = np.asarray(frames, dtype=np.float64).reshape(len(ids), FRAME)

    def observe(self, state: MwState) -> np.ndarray:
        """(B, 39): reset envs as `reset` returns them, the others as `step` does."""
        return self.observe_frames(frame(self.task, state), state.target)

    def observe_frames(self, frames: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """`observe` from each env's current frame (B, 18) and goal (B, 3), as metasim's
        env reports them (`metaworld_frame`, `metaworld_goal`)."""
        cur = np.array(frames, dtype=np.float64)
        cur[self.given] = self.prev[self.given]  # a reset's frame given by the caller
        prev = np.where(self.fresh[:, None], cur, self.prev)
        given_goal = np.asarray(goal, dtype=np.float64)
        goal_seen = np.zeros_like(given_goal) if self.partially_observable else given_goal
        raw = np.concatenate([cur, prev, goal_seen], axis=1)
        obs = clip_observation(self.task, raw, self.partially_observable)
        obs[self.fresh] = raw[self.fresh]
        self.prev, self.fresh[:], self.given[:] = cur, False, False
        return obs
