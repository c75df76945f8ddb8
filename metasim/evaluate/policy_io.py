"""What a policy's declared conventions need from a scene before it runs: its context,
the converter from its action convention to the env's action space (from the robot's base
pose), and the camera views its observation spec renders."""

from __future__ import annotations

import numpy as np

from metasim.envs.vec_env import CameraView, MetasimVectorEnv
from metasim.policies.base import PolicyContext, PolicyOptions
from metasim.policies.conventions import ActionConvention, ActionConverter
from metasim.policies.observation import ObservationSpec
from metasim.scene.compile import CompiledScene


def policy_context(
    env: MetasimVectorEnv,
    action_space: str,
    options: PolicyOptions | None = None,
) -> PolicyContext:
    return PolicyContext.of(env.compiled, env.num_envs, action_space, options)


def converter_for(compiled: CompiledScene, conv: ActionConvention) -> ActionConverter:
    """The converter from the policy's declared action convention to the env's space
    (a ValueError when the convention cannot drive this robot)."""
    base_pos, base_mat = robot_base_pose(compiled)
    n_arm = len(compiled.index.arm_qpos)
    space = conv.env_space_on(compiled.robot.control)  # ValueError when they cannot drive it
    return ActionConverter(conv, n_arm, compiled.control_dt, base_pos, base_mat, space)


def camera_views(compiled: CompiledScene, spec: ObservationSpec) -> list[CameraView]:
    """Camera views the policy's observation spec needs."""
    return spec.views(compiled)


def robot_base_pose(compiled: CompiledScene) -> tuple[np.ndarray, np.ndarray]:
    """World position and rotation matrix of the robot's root body."""
    import mujoco

    m = compiled.model
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    for b in range(1, m.nbody):
        if m.body_parentid[b] == 0 and m.body(b).name.startswith("robot/"):
            return d.xpos[b].copy(), d.xmat[b].reshape(3, 3).copy()
    return np.zeros(3), np.eye(3)
