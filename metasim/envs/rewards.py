"""Dense reward terms for RL on metasim tasks (the Isaac Lab contract, metasim.envs.isaaclab).

A task's reward is derived from its success predicate: each predicate kind with a dense
builder in `REWARD_BUILDERS` contributes named terms `f(view) -> (B,)` float64, in [0, 1]
each, weighted and summed; the leaves of `all` / `any` trees contribute theirs; success
adds `SUCCESS_WEIGHT`. A task whose predicate has no builder (LIBERO's, Meta-World's and
robosuite's own kinds, `on`, `not`) gets the sparse reward: success alone. The terms
follow Isaac Lab's lift task (`reaching_object`: 1 - tanh(d / std); `lifting_object`).

| predicate | terms (weight) |
|---|---|
| `lifted` | `reach_<object>` (1): hand to object; `lift_<object>` (5): height gained / goal |
| `in_region` | `reach_<object>` (1); `place_<object>` (2): object to the region's centre |
| `grasped` | `reach_<object>` (1) |
| `joint_open`, `joint_closed` | `joint_<joint>` (2): opening toward the goal fraction |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from metasim.registry import Registry
from metasim.rotations import quat_to_mat
from metasim.scene.compile import CompiledScene
from metasim.scene.kinds import predicate_name
from metasim.scene.task_schema import (
    AllOf,
    AnyOf,
    Grasped,
    InRegion,
    JointClosed,
    JointOpen,
    Lifted,
)
from metasim.tasks.predicates import TaskView

TermFn = Callable[[TaskView], np.ndarray]
REACH_STD = 0.2  # m: 1 - tanh(d / std) (Isaac Lab's lift task: `reaching_object`, std 0.1)
SUCCESS_WEIGHT = 10.0


@dataclass(frozen=True)
class RewardTerm:
    """One dense term: its name, weight and reader (B,) of a task view."""

    name: str
    weight: float
    fn: TermFn


RewardBuilder = Callable[[Any, CompiledScene], list[RewardTerm]]
# Predicate kind -> the builder of its dense terms (a benchmark may register its own).
REWARD_BUILDERS: Registry[RewardBuilder] = Registry("dense reward builder")


def _reach(c: CompiledScene, obj: str) -> RewardTerm:
    b, site = c.index.bodies[obj], c.index.ee_site

    def fn(v: TaskView) -> np.ndarray:
        d = np.linalg.norm(v.kin.body_pos[:, b] - v.kin.site_pos[:, site], axis=-1)
        return np.asarray(1.0 - np.tanh(d / REACH_STD))

    return RewardTerm(f"reach_{obj}", 1.0, fn)


@REWARD_BUILDERS.register(predicate_name(Lifted))
def _lifted(node: Lifted, c: CompiledScene) -> list[RewardTerm]:
    obj, h = node.lifted.object, node.lifted.height
    b = c.index.bodies[obj]

    def lift(v: TaskView) -> np.ndarray:
        gain = v.kin.body_pos[:, b, 2] - v.init_body_pos[:, b, 2]
        return np.asarray(np.clip(gain / h, 0.0, 1.0))

    return [_reach(c, obj), RewardTerm(f"lift_{obj}", 5.0, lift)]


@REWARD_BUILDERS.register(predicate_name(InRegion))
def _in_region(node: InRegion, c: CompiledScene) -> list[RewardTerm]:
    obj, reg = node.in_region.object, node.in_region.region
    b, center = c.index.bodies[obj], np.asarray(reg.center, dtype=np.float64)
    frame = c.index.bodies[reg.frame] if reg.frame else None

    def place(v: TaskView) -> np.ndarray:
        goal = np.broadcast_to(center, v.kin.body_pos[:, b].shape)
        if frame is not None:  # the region's centre in the world frame
            rot = quat_to_mat(v.kin.body_quat[:, frame])
            goal = v.kin.body_pos[:, frame] + np.einsum("bij,j->bi", rot, center)
        d = np.linalg.norm(v.kin.body_pos[:, b] - goal, axis=-1)
        return np.asarray(1.0 - np.tanh(d / REACH_STD))

    return [_reach(c, obj), RewardTerm(f"place_{obj}", 2.0, place)]


@REWARD_BUILDERS.register(predicate_name(Grasped))
def _grasped(node: Grasped, c: CompiledScene) -> list[RewardTerm]:
    return [_reach(c, node.grasped.object)]


def _joint_term(c: CompiledScene, joint: str, goal: float, opening: bool) -> RewardTerm:
    j = c.joint_ref(joint)
    adr, (lo, hi) = c.index.joint_qpos[j], c.index.joint_range[j]

    def fn(v: TaskView) -> np.ndarray:
        frac = (v.kin.qpos[:, adr] - lo) / (hi - lo)
        done = frac / max(goal, 1e-6) if opening else (1.0 - frac) / max(1.0 - goal, 1e-6)
        return np.asarray(np.clip(done, 0.0, 1.0))

    return RewardTerm(f"joint_{joint}", 2.0, fn)


@REWARD_BUILDERS.register(predicate_name(JointOpen))
def _joint_open(node: JointOpen, c: CompiledScene) -> list[RewardTerm]:
    return [_joint_term(c, node.joint_open.joint, node.joint_open.fraction, True)]


@REWARD_BUILDERS.register(predicate_name(JointClosed))
def _joint_closed(node: JointClosed, c: CompiledScene) -> list[RewardTerm]:
    return [_joint_term(c, node.joint_closed.joint, node.joint_closed.fraction, False)]


def _leaves(node: Any) -> list[Any]:
    if isinstance(node, AllOf):
        return [leaf for part in node.all for leaf in _leaves(part)]
    if isinstance(node, AnyOf):
        return [leaf for part in node.any for leaf in _leaves(part)]
    return [node]


def dense_terms(compiled: CompiledScene) -> list[RewardTerm]:
    """The dense terms of the task's success predicate (empty: the task's reward is
    sparse). A term two leaves share (one object reached twice) is counted once."""
    out: dict[str, RewardTerm] = {}
    for leaf in _leaves(compiled.scene.task.success):
        build = REWARD_BUILDERS.get(predicate_name(type(leaf)))
        for term in build(leaf, compiled) if build is not None else []:
            out.setdefault(term.name, term)
    return list(out.values())
