"""`policy=metaworld_expert`: the package's own scripted policies, driving metasim.

Each control step the policy builds the package's 39-D observation from metasim's state
(`Observer`: the current frame, the previous one, the goal, clipped as the package's
`step` clips it; an episode's first observation is the package's recorded reset
observation, unclipped; the goal zeroed in an ML benchmark's task, as the package hides
it) and asks the package's scripted policy for the task (`metaworld.policies`, imported
in the reference venv, never copied) for its actions, over the reference worker's pipe
(`MetaWorldRef.expert_actions`). The actions are the package's 4-D `mocap_delta`
actions, executed unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metasim.envs.vec_env import CameraView
from metasim.metaworld.obs import PrevFrames
from metasim.metaworld.terms import task_of, world_of
from metasim.policies.base import PolicyContext, register_policy


class Observer:
    """The package's observation (B, 39) of each env, step after step, from the env's
    privileged observation (`PrevFrames` fed with the frames the env reports, and with
    the package's recorded reset frame for an env whose next observation is its
    episode's first): `reset(ids)` marks those envs."""

    def __init__(self, task: str, num_envs: int, partially_observable: bool = False) -> None:
        self.frames = PrevFrames(task, num_envs, partially_observable)

    def reset(self, env_ids: np.ndarray) -> None:
        self.frames.reset(env_ids)

    def observe(self, privileged: dict[str, Any]) -> np.ndarray:
        fresh = np.flatnonzero(self.frames.fresh)
        if fresh.size:
            reset = np.asarray(privileged["metaworld_reset_frame"], dtype=np.float64)
            self.frames.reset(fresh, reset[fresh])
        return self.frames.observe_frames(
            privileged["metaworld_frame"], privileged["metaworld_goal"]
        )


class MetaworldExpert:
    """The package's scripted policy of the scene's task, over the reference's pipe."""

    action_space = "mocap_delta"
    views: tuple[CameraView, ...] = ()  # reads simulator state; renders nothing

    def __init__(self, ctx: PolicyContext) -> None:
        from metasim.metaworld.reference.simulator import MetaWorldRef

        task = task_of_scene(ctx)
        world = world_of(ctx.compiled.scene)
        hidden = world is not None and world.partially_observable  # an ML benchmark's task
        self.task, self.num_envs = task, ctx.num_envs
        self.observer = Observer(task, ctx.num_envs, hidden)
        self.ref = MetaWorldRef()

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None:
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids)
        self.observer.reset(ids)

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        """(B, 1, 4) the package's actions for the batch's observations."""
        mw_obs = self.observer.observe(obs["privileged"])
        actions = np.asarray(self.ref.expert_actions(self.task, mw_obs), dtype=np.float64)
        return actions[:, None, :]

    def close(self) -> None:
        self.ref.close()


def task_of_scene(ctx: PolicyContext) -> str:
    from metasim.envs.terms import Layout

    task = task_of(Layout(ctx.compiled, np.zeros(0, dtype=int), np.zeros(0, dtype=int)))
    if task is None:
        from metasim.errors import MetasimInputError

        raise MetasimInputError(
            "policy=metaworld_expert",
            [f"scene {ctx.compiled.scene.name!r} is not a Meta-World task (metaworld:<name>)"],
        )
    return task


@register_policy("metaworld_expert")
def _metaworld_expert(ctx: PolicyContext) -> MetaworldExpert:
    return MetaworldExpert(ctx)
