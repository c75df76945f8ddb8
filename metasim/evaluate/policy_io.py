"""What a policy's declared conventions need from a scene: its context, the converter
from its action convention to the env's action space (from the robot's base pose) and the
env's actions it gives each step, and the camera views its observation spec renders."""

from __future__ import annotations

import numpy as np

from metasim.envs.cameras import rig_views
from metasim.envs.vec_env import CameraView, MetasimVectorEnv
from metasim.policies.base import PolicyContext, PolicyOptions
from metasim.policies.conventions import ActionConvention, ActionConverter
from metasim.policies.observation import ObservationSpec
from metasim.scene.compile import CompiledScene
from metasim.sim.memory import image_bytes


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


def env_actions(
    env: MetasimVectorEnv, convert: ActionConverter, raw: np.ndarray, active: np.ndarray
) -> tuple[np.ndarray, dict[int, str]]:
    """(B, dim) the env's actions for the policy's `raw` (B, D): converted for the `active`
    (B,) slots, the others hold still; the slots whose actions cannot be converted, with why."""
    if convert.identity and active.all():  # canonical actions, nobody idle
        return raw.copy(), {}
    kin = env.handler.kinematics()
    action = env.controller.hold_action(kin)
    failed: dict[int, str] = {}
    if active.any():
        ids = np.flatnonzero(active)
        # converted against the robot's true state, as a real controller would
        state = env.robot_state(kin) if not convert.identity else {}
        pol = {k: v[ids] for k, v in state.items()}
        try:
            action[ids] = convert(raw[ids], pol)
        except ValueError as exc:
            failed = {int(i): f"invalid action: {exc}" for i in ids}
    return action, failed


def camera_views(compiled: CompiledScene, spec: ObservationSpec) -> list[CameraView]:
    """Camera views the policy's observation spec needs."""
    return spec.views(compiled)


def image_bytes_per_env(
    compiled: CompiledScene, views: list[CameraView], render: str | None, spp: int | None
) -> int:
    """One env's camera images for `views` (metasim.sim.memory.image_bytes) with the
    renderer eval asks for (`render`, `render_spp`; None: the scene's)."""
    renderer = render or compiled.scene.render.renderer
    samples = spp or compiled.scene.render.raytrace.samples_per_pixel
    flat = [(v.width, v.height, v.depth) for v in rig_views(compiled, views)]
    return image_bytes(flat, samples if renderer == "warp" else None)


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
