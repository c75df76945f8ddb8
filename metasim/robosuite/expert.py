"""`policy=robosuite_expert`: a state-based scripted expert for robosuite's pick tasks
(`task.expert` of the scene: `pick_lift` of Lift, `pick_place` of Stack and PickPlaceCan),
driving robosuite's OSC_POSE (xyz x 0.05 m relative to the current end-effector pose;
no rotation: the hand keeps robosuite's downward start; gripper -1 open, +1 close).

Per env, a phase machine over the grip site and two bodies of robosuite's world (the
object and the target, read from the privileged term `robosuite_expert_bodies`): hover
above the object, descend, close, lift; for `pick_place` carry over the target, lower to
it plus `target_offset`, open and retreat. Proportional control, clipped to [-1, 1].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metasim.envs.terms import OBS_TERMS, Layout, ObsTerm
from metasim.envs.vec_env import CameraView
from metasim.policies.base import PolicyContext, PolicyOptions, register_policy
from metasim.policies.conventions import GRIPPERS
from metasim.scene.schema import ExpertSpec

TERM = "robosuite_expert_bodies"
SCENE_PREFIX = "robosuite_"  # the imported scenes' names (importer/scene.py)
HOVER, GAIN, POS_SCALE = 0.10, 2.0, 0.05
# Phases: (name, gripper closed, the phase ends within this distance (m), max steps).
PHASES = (
    ("hover", False, 0.01, 80), ("descend", False, 0.006, 60), ("close", True, -1.0, 15),
    ("lift", True, 0.01, 60), ("carry", True, 0.01, 120), ("lower", True, 0.008, 80),
    ("release", False, -1.0, 15), ("retreat", False, 0.01, 400),
)  # fmt: skip
SKILLS = {"pick_lift": 4, "pick_place": len(PHASES)}  # skill -> phases it runs


def _spec(layout: Layout) -> ExpertSpec | None:
    """The expert spec of a robosuite scene (other scenes' pick experts are not ours)."""
    scene = layout.compiled.scene
    exp = scene.task.expert
    ours = scene.name.startswith(SCENE_PREFIX)
    return exp if ours and exp is not None and exp.skill in SKILLS and exp.object else None


def _bodies(layout: Layout) -> np.ndarray:
    exp = _spec(layout)
    assert exp is not None and exp.object is not None
    m = layout.compiled.model
    return np.array([m.body(exp.object).id, m.body(exp.target or exp.object).id])


OBS_TERMS.register(
    TERM,
    ObsTerm("privileged", lambda lay: (2, 3), source="body_pos", index=_bodies,
            applies=lambda lay: _spec(lay) is not None),
)  # fmt: skip


class RobosuiteExpert:
    """Vectorized phase machine for one robosuite pick task (B envs)."""

    views: tuple[CameraView, ...] = ()  # reads simulator state; renders nothing

    def __init__(self, ctx: PolicyContext) -> None:
        exp = ctx.compiled.scene.task.expert
        if exp is None or exp.skill not in SKILLS or not exp.object:
            raise ValueError(
                f"the robosuite_expert takes the pick tasks ({', '.join(SKILLS)}); scene "
                f"{ctx.compiled.scene.name!r} has expert {exp.skill if exp else None!r}"
            )
        conv = ctx.typed(PolicyOptions).actions
        if conv.space != "osc_pose" or ctx.action_space != "osc_pose":
            raise ValueError("the robosuite_expert drives robosuite's osc_pose controller")
        grip, one = GRIPPERS[conv.gripper], np.ones(1)
        self.cmd = {False: float(grip.from_open1(one, one)[0]),
                    True: float(grip.from_open1(np.zeros(1), one)[0])}  # fmt: skip
        self.action_space = ctx.action_space
        self.last = SKILLS[exp.skill] - 1
        self.lift, self.offset = exp.lift, np.asarray(exp.target_offset)
        self.phase = np.zeros(ctx.num_envs, dtype=np.int64)
        self.count = np.zeros(ctx.num_envs, dtype=np.int64)
        self.anchor = np.zeros((ctx.num_envs, 3))

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None:
        ids = slice(None) if env_ids is None else np.asarray(env_ids)
        self.phase[ids] = 0
        self.count[ids] = 0

    def close(self) -> None:
        """Nothing to release."""

    def _target(self, k: int, ee: np.ndarray, obj: np.ndarray, goal: np.ndarray) -> np.ndarray:
        up = np.array([0.0, 0.0, 1.0])
        name = PHASES[k][0]
        if name == "hover":
            return obj + HOVER * up
        if name == "descend":
            return obj
        if name == "lift":
            return self.anchor + self.lift * up
        if name == "carry":
            return np.concatenate([goal[:, :2], ee[:, 2:]], axis=1)
        if name == "lower":
            return goal + self.offset
        if name == "retreat":
            return self.anchor + HOVER * up
        return self.anchor  # close, release: hold still

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        ee = np.asarray(obs["policy"]["ee_pos"])
        bodies = np.asarray(obs["privileged"][TERM])
        fresh = self.count == 0
        self.anchor[fresh] = ee[fresh]
        action = np.zeros((len(ee), 7))
        for k in np.unique(self.phase):
            sel = self.phase == k
            target = self._target(int(k), ee, bodies[:, 0], bodies[:, 1])[sel]
            err = target - ee[sel]
            action[sel, :3] = np.clip(err * GAIN / POS_SCALE, -1.0, 1.0)
            action[sel, 6] = self.cmd[PHASES[k][1]]
            _, _, tol, most = PHASES[k]
            self.count[sel] += 1
            done = (np.linalg.norm(err, axis=1) < tol) | (self.count[sel] >= most)
            done &= k < self.last
            ids = np.flatnonzero(sel)[done]
            self.phase[ids] += 1
            self.count[ids] = 0
        return action[:, None, :]


@register_policy("robosuite_expert")
def _robosuite_expert(ctx: PolicyContext) -> RobosuiteExpert:
    return RobosuiteExpert(ctx)
