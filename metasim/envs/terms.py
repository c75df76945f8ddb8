"""The observation terms of the vector env: one table, iterated by everything that needs
the vocabulary (the env's spaces and observations, state noise, a policy's state parts).

Each term has its group (`policy`: what a policy may see; `privileged`: simulator state
for scripted experts and critics), its per-env shape, its reader from the batched
kinematics, its bounds and whether state noise (`state_noise`) applies to it.
Camera images (`<view>_rgb`, `<view>_depth`) are added per declared view.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from metasim.rotations import mat_to_quat
from metasim.scene.compile import CompiledScene
from metasim.sim.base import Kinematics


@dataclass(frozen=True)
class Layout:
    """Where the terms read from: the compiled scene's indices and the env's fixture
    bodies and sites (see vec_env.scene_parts)."""

    compiled: CompiledScene
    fixture_body_ids: np.ndarray
    fixture_site_ids: np.ndarray

    @property
    def n_arm(self) -> int:
        return len(self.compiled.index.arm_qpos)


@dataclass(frozen=True)
class ObsTerm:
    """One observation term: (B, *shape(layout)) float64 read from the kinematics."""

    group: Literal["policy", "privileged"]
    shape: Callable[[Layout], tuple[int, ...]]
    read: Callable[[Layout, Kinematics], np.ndarray]
    noise: bool = False  # state_noise perturbs it
    low: float = -np.inf
    high: float = np.inf


def gripper_opening(layout: Layout, kin: Kinematics) -> np.ndarray:
    """(B, 1) finger opening in [0, 1], 1 = open (always open without a gripper)."""
    idx = layout.compiled.index
    grip = layout.compiled.robot.gripper
    if grip is not None and len(idx.gripper_qpos):
        opening = np.abs(kin.qpos[:, idx.gripper_qpos]).sum(axis=1, keepdims=True) / grip.max_width
    else:
        opening = np.ones((kin.qpos.shape[0], 1))
    return np.asarray(np.clip(opening, 0.0, 1.0))


OBS_TERMS: dict[str, ObsTerm] = {
    "joint_pos": ObsTerm(
        "policy",
        lambda lay: (lay.n_arm,),
        lambda lay, kin: kin.qpos[:, lay.compiled.index.arm_qpos].copy(),
        noise=True,
    ),
    "joint_vel": ObsTerm(
        "policy",
        lambda lay: (lay.n_arm,),
        lambda lay, kin: kin.qvel[:, lay.compiled.index.arm_dof].copy(),
    ),
    "gripper": ObsTerm("policy", lambda lay: (1,), gripper_opening, low=0.0, high=1.0),
    "ee_pos": ObsTerm(
        "policy",
        lambda lay: (3,),
        lambda lay, kin: kin.site_pos[:, lay.compiled.index.ee_site].copy(),
        noise=True,
    ),
    "ee_quat": ObsTerm(  # (w, x, y, z) of the grasp site
        "policy",
        lambda lay: (4,),
        lambda lay, kin: mat_to_quat(kin.site_mat[:, lay.compiled.index.ee_site]),
    ),
    "hand_quat": ObsTerm(  # (w, x, y, z) of the hand body, as MuJoCo computes it (no sign fix)
        "policy",
        lambda lay: (4,),
        lambda lay, kin: kin.body_quat[:, lay.compiled.index.hand_body].copy(),
    ),
    "gripper_qpos": ObsTerm(  # the finger joints' positions (m), as LIBERO's state has them
        "policy",
        lambda lay: (len(lay.compiled.index.gripper_qpos),),
        lambda lay, kin: kin.qpos[:, lay.compiled.index.gripper_qpos].copy(),
    ),
    "object_pos": ObsTerm(
        "privileged",
        lambda lay: (len(lay.compiled.index.object_names), 3),
        lambda lay, kin: kin.body_pos[:, lay.compiled.index.object_body].copy(),
        noise=True,
    ),
    "object_quat": ObsTerm(
        "privileged",
        lambda lay: (len(lay.compiled.index.object_names), 4),
        lambda lay, kin: kin.body_quat[:, lay.compiled.index.object_body].copy(),
    ),
    "fixture_qpos": ObsTerm(
        "privileged",
        lambda lay: (len(lay.compiled.index.joint_qpos),),
        lambda lay, kin: kin.qpos[:, lay.compiled.index.joint_qpos].copy(),
    ),
    "fixture_body_pos": ObsTerm(
        "privileged",
        lambda lay: (len(lay.fixture_body_ids), 3),
        lambda lay, kin: kin.body_pos[:, lay.fixture_body_ids].copy(),
    ),
    "fixture_site_pos": ObsTerm(
        "privileged",
        lambda lay: (len(lay.fixture_site_ids), 3),
        lambda lay, kin: kin.site_pos[:, lay.fixture_site_ids].copy(),
        noise=True,
    ),
}

ROBOT_STATE = tuple(k for k, t in OBS_TERMS.items() if t.group == "policy")


def read_group(group: str, layout: Layout, kin: Kinematics) -> dict[str, np.ndarray]:
    """Every term of `group`, (B, *shape) each, in table order."""
    return {k: t.read(layout, kin) for k, t in OBS_TERMS.items() if t.group == group}
