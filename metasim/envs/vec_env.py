"""A gymnasium vector env with Isaac Lab's conventions over any metasim backend.

- `num_envs` envs stepped as one batch; observations are a dict of groups, `"policy"`
  (what a policy may see) and `"privileged"` (simulator state for scripted experts and
  critics), each a dict of (B, ...) arrays, or torch tensors on `device` when asked.
- `step(action) -> (obs, reward, terminated, truncated, extras)`; `terminated` is task
  success, `truncated` the time limit (or a physics failure, flagged in extras).
- Per-env autoreset in the same step: the returned obs of a finished env is already the
  first obs of its next episode, the finished episode's numbers are in `extras["episode"]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from metasim.control.action_kinds.base import native_kind
from metasim.control.actions import ActionController, ActionKind
from metasim.envs.cameras import CameraView, image_dict, rig_views
from metasim.envs.device_images import as_array_type, device_frames, device_refusal, host_array
from metasim.envs.noise import RuntimeNoise, WorldNoise
from metasim.envs.settle import SettleSteps
from metasim.envs.terms import Layout, group_reader, scene_parts, terms_of
from metasim.scene.compile import CompiledScene, compile_scene
from metasim.scene.schema import Scene
from metasim.scene.sources import compile_task
from metasim.sim import get_backend
from metasim.sim.base import Kinematics, ModelEdit
from metasim.sim.cameras import CameraRig
from metasim.sim.memory import check_env_memory
from metasim.tasks.fixture_placement import (
    FixturePoses,
    nominal_fixture_poses,
    sample_fixture_poses,
)
from metasim.tasks.init_states import FieldValues
from metasim.tasks.predicates import TaskView
from metasim.tasks.seeds import episode_seed
from metasim.tasks.task import TaskRuntime


def as_compiled(scene: str | Path | Scene | CompiledScene) -> CompiledScene:
    if isinstance(scene, CompiledScene):
        return scene
    if isinstance(scene, Scene):
        return compile_scene(scene)
    return compile_task(scene)


class MetasimVectorEnv(gym.vector.VectorEnv):
    metadata = {  # noqa: RUF012  (gymnasium reads it as a class attribute)
        "autoreset_mode": AutoresetMode.SAME_STEP,
        "render_modes": ["rgb_array"],
    }

    def __init__(
        self,
        scene: str | Path | Scene | CompiledScene,
        num_envs: int = 1,
        backend: str = "mujoco",
        action_space: ActionKind | None = None,
        cameras: Sequence[str | CameraView] = (),
        device: str = "cpu",
        array_type: str = "numpy",
        seed: int = 0,
        autoreset: bool = True,
        render_mode: str | None = None,
        noise: RuntimeNoise | Sequence[RuntimeNoise] | None = None,
        render: str | None = None,
        render_spp: int | None = None,
        **backend_options: Any,
    ) -> None:
        self.compiled = as_compiled(scene)
        if backend == "mujoco":  # refused before it allocates (metasim.sim.memory)
            check_env_memory(self.compiled.model, num_envs, f"num_envs={num_envs}")
        # the camera renderer: `opengl` or `warp` (None: the scene's render.renderer)
        self.renderer = render or self.compiled.scene.render.renderer
        raytrace = self.compiled.scene.render.raytrace  # with render_spp's anti-aliasing
        spp = {"samples_per_pixel": render_spp} if render_spp is not None else {}
        self.raytrace = raytrace.model_copy(update=spp)
        self.worlds = WorldNoise(noise, num_envs)  # each env's runtime noise (one or per env)
        self.num_envs = num_envs
        self.device = device
        self.array_type = array_type
        self.render_mode = render_mode
        self.autoreset = autoreset
        self.handler = get_backend(backend).launch(self.compiled, num_envs, **backend_options)
        self.backend = backend
        kind = action_space or native_kind(self.compiled.robot)  # none asked: the robot's
        self.controller = ActionController(self.compiled, kind, num_envs)
        self.task = TaskRuntime(self.compiled)
        self.handler.track_contacts = self.task.needs_contacts
        self.views = tuple(c if isinstance(c, CameraView) else CameraView(c) for c in cameras)
        self.cameras = tuple(v.camera for v in self.views)
        self._rig: CameraRig | None = None  # made at the first observation with cameras
        self.backgrounds: Any = None  # render=warp: a SplatGroups, one group per world
        self.device_images = False  # images as torch tensors on the rig's device
        self.settle = SettleSteps(self.compiled.scene.task.settle_steps, num_envs)
        self.max_episode_steps = self.compiled.max_steps
        idx = self.compiled.index
        self.object_names, self.fixture_bodies, self.fixture_sites = scene_parts(self.compiled)
        self.layout = Layout(
            self.compiled,
            np.array([idx.bodies[n] for n in self.fixture_bodies], dtype=int),
            np.array([idx.sites[n] for n in self.fixture_sites], dtype=int),
        )
        self._read_policy = group_reader("policy", self.layout)
        self._read_privileged = group_reader("privileged", self.layout)
        self._base_seed = seed
        self._episodes_started = 0
        self._seeds = np.zeros(num_envs, dtype=np.int64)
        self._steps = np.zeros(num_envs, dtype=np.int64)
        self._progress = np.zeros(num_envs)
        self._init_body_pos = np.zeros((num_envs, self.compiled.model.nbody, 3))
        self._ctrl = np.zeros((num_envs, self.compiled.model.nu))
        # Each env's current fixture poses (scenes whose fixtures are re-placed per episode)
        self._fixtures = nominal_fixture_poses(self.compiled, num_envs)
        # Each env's model rows its episode's recorded initial state sets (state_fields)
        self._state_fields = FieldValues(self.task.init_states, self.compiled.model, num_envs)
        self._build_spaces()
        # (B, dim) the actions the last `step` applied to the controller, after runtime
        # action noise and latency (what `run_task`'s `on_applied` hook reports).
        self.applied_actions = np.zeros((num_envs, self.controller.dim))

    def use_settle_steps(self) -> None:
        """Start every episode with the task's settle steps (metasim.envs.settle)."""
        self.settle.use(self.controller)

    def add_views(self, views: Sequence[CameraView]) -> None:
        """Render these camera views too from the next observation on."""
        new = [v for v in views if v not in self.views]
        if new:
            self.views = (*self.views, *new)
            self.cameras = tuple(v.camera for v in self.views)
            if self._rig is not None:
                self.handler.release_rig(self._rig)
                self._rig = None
            self._build_spaces()

    # ------------------------------------------------------------ spaces

    def _build_spaces(self) -> None:
        inf = np.inf
        groups: dict[str, dict[str, spaces.Space[Any]]] = {"policy": {}, "privileged": {}}
        for key, term in terms_of(self.layout):
            shape = term.shape(self.layout)
            groups[term.group][key] = spaces.Box(term.low, term.high, shape, dtype=np.float64)
        policy = groups["policy"]
        for v in self.views:
            w, h = self.compiled.camera_size(v.camera)
            w, h = v.width or w, v.height or h
            policy[f"{v.key}_rgb"] = spaces.Box(0, 255, shape=(h, w, 3), dtype=np.uint8)
            if v.depth:
                policy[f"{v.key}_depth"] = spaces.Box(0, inf, shape=(h, w), dtype=np.float32)
        self.single_observation_space = spaces.Dict(
            {group: spaces.Dict(terms) for group, terms in groups.items()}
        )
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )
        low, high = self.controller.bounds()
        self.single_action_space = spaces.Box(low, high, dtype=np.float64)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)

    # ------------------------------------------------------------ gym API

    @property
    def episode_steps(self) -> np.ndarray:
        """(B,) control steps each env has taken in its current episode (a copy)."""
        return self._steps.copy()

    @property
    def episode_seeds(self) -> np.ndarray:
        """(B,) each env's current episode seed (a copy)."""
        return self._seeds.copy()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset all envs, or `options["env_ids"]`, to start `options["episodes"]` (episode
        k's seed is `episode_seed(seed, k)`, a task with recorded init states starts it from
        state k mod N; without them, the envs' running count); `options["seeds"]` overrides
        the derived seeds. `info["seeds"]` holds each env's episode seed."""
        options = options or {}
        if seed is not None:
            self._base_seed = seed
            self._episodes_started = 0
        env_ids = np.asarray(options.get("env_ids", np.arange(self.num_envs)), dtype=np.int64)
        seeds = options.get("seeds")
        episodes = options.get("episodes")
        self._reset_envs(
            env_ids,
            None if seeds is None else list(seeds),
            None if episodes is None else [int(k) for k in episodes],
        )
        return self._observe(fresh=env_ids), {"seeds": self._seeds.copy()}

    def _reset_envs(
        self, env_ids: np.ndarray, seeds: list[int] | None, episodes: list[int] | None = None
    ) -> None:
        if seeds is None:
            if episodes is None:
                episodes = [self._episodes_started + k for k in range(len(env_ids))]
                self._episodes_started += len(env_ids)
            seeds = [episode_seed(self._base_seed, k) for k in episodes]
        base = self.handler.default_state(len(env_ids))
        state = self.task.sample_initial(base, seeds, episodes)
        self._place_fixtures(env_ids, seeds, episodes)
        for edit in self._state_fields.edits(env_ids, episodes or [int(s) for s in seeds]):
            self.handler.apply(edit)
        self.handler.reset(env_ids, state)
        init = self.task.init_states
        self.controller.reset(env_ids, state.qpos, stale=init is not None and init.stale_controller)
        self._seeds[env_ids] = seeds
        self._steps[env_ids] = 0
        self._progress[env_ids] = 0.0
        self._ctrl[env_ids] = state.ctrl
        self.settle.start(env_ids)
        kin = self.handler.kinematics()
        self._init_body_pos[env_ids] = kin.body_pos[env_ids]
        # each episode's own noise stream, and its latency queue holding the arm still
        self.worlds.start(env_ids, seeds, lambda: self.controller.hold_action(kin))

    def _place_fixtures(self, env_ids: np.ndarray, seeds: list[int], eps: list[int] | None) -> None:
        """Draw the fixture poses of the episodes `eps` starting in `env_ids` (from their
        seeds, or given per episode) and set them as per-env model edits (body_pos, body_quat)."""
        current = self._fixtures
        if current is None:
            return
        drawn = sample_fixture_poses(self.compiled, seeds, eps)
        assert drawn is not None
        current.pos[env_ids], current.quat[env_ids] = drawn.pos, drawn.quat
        for j, body in enumerate(current.bodies):
            self.handler.apply(ModelEdit("body_pos", int(body), current.pos[:, j]))
            self.handler.apply(ModelEdit("body_quat", int(body), current.quat[:, j]))

    def fixture_poses(self) -> FixturePoses | None:
        """The fixture poses each env's episode runs with (pos (B, n, 3), quat (B, n, 4));
        None when the scene re-places no fixture. A copy."""
        f = self._fixtures
        return None if f is None else FixturePoses(f.names, f.bodies, f.pos.copy(), f.quat.copy())

    def step(
        self, actions: Any
    ) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        actions = self.worlds.actions(self.settle.actions(host_array(actions)))
        self.applied_actions = actions.copy()
        kin = self.handler.kinematics()
        jac = self.handler.site_jacobian(self.compiled.index.ee_site)
        self._ctrl = self.controller.to_ctrl(actions, kin, jac, self._ctrl)
        mocap = self.controller.mocap  # mocap-driven arms: targets before the substeps
        if mocap is not None:
            self.handler.set_mocap(mocap.pos, mocap.quat, mocap.ids)
        self.handler.step(self._ctrl, self.controller.substep)
        kin = self.handler.kinematics()
        self._steps += 1
        self.settle.count()
        # a NaN or inf joint makes its row's sum non-finite (as does a sum past 1e308)
        stable = np.isfinite(np.add.reduce(kin.qpos, axis=1))
        unstable = ~stable
        contacts = self.handler.contacts() if self.task.needs_contacts else None
        # Success reads one physics state: the poses of the state whose contacts these are
        # (the last substep's), as LIBERO's done after robosuite's env.step reads them.
        # A benchmark whose env runs mj_forward after the substeps (Meta-World) reads the
        # poses of the state after them (`task.success_reads: forward`).
        read = self.handler.kinematics(at=self.task.success_reads)
        view = TaskView(read, self._init_body_pos, contacts)
        success = self.task.success(view) & stable
        self._progress = np.maximum(self._progress, self.task.progress(view, success))
        terminated = success
        truncated = ((self._steps >= self.max_episode_steps) | unstable) & ~terminated
        done = terminated | truncated
        extras: dict[str, Any] = {
            "success": success.copy(),
            "progress": self._progress.copy(),
            "episode_step": self._steps.copy(),
            "unstable": unstable,
        }
        if done.any():
            ids = np.flatnonzero(done)
            extras["episode"] = {
                "env_ids": ids,
                "seed": self._seeds[ids].copy(),
                "success": success[ids].copy(),
                "progress": self._progress[ids].copy(),
                "length": self._steps[ids].copy(),
                "unstable": unstable[ids].copy(),
            }
            if self._fixtures is not None:  # the poses the episodes ran with
                extras["episode"]["fixture_pos"] = self._fixtures.pos[ids].copy()
                extras["episode"]["fixture_quat"] = self._fixtures.quat[ids].copy()
            if self.autoreset:
                self._reset_envs(ids, None)
        reward = success.astype(np.float64)
        return (
            self._observe(),
            self._out(reward),
            self._out(terminated),
            self._out(truncated),
            extras,
        )

    # ------------------------------------------------------------ observations

    def observe(self, kin: Kinematics | None = None) -> dict[str, Any]:
        """The observation of the envs' current state (e.g. after `handler.set_state`):
        what `reset` and `step` return as their first item (after a step, taken at the
        scene's observation instant, `task.observe_substep`); its terms read from `kin`
        when given (a shadow env synced to another simulator's instant)."""
        return self._observe(kin)

    def robot_state(self, kin: Kinematics | None = None) -> dict[str, np.ndarray]:
        """The robot's true proprioception (B, ...): joint_pos, joint_vel, gripper opening
        in [0, 1] (1 = open), ee_pos, ee_quat (w, x, y, z) of the grasp site."""
        return self._read_policy(kin or self.handler.kinematics(), self._steps == 0)

    def _observe(
        self, kin: Kinematics | None = None, fresh: np.ndarray | None = None
    ) -> dict[str, Any]:
        kin = self.handler.kinematics(at="observed") if kin is None else kin  # (see observe)
        policy: dict[str, Any] = self.robot_state(kin)
        policy.update(self.images())
        privileged = self._read_privileged(kin, self._steps == 0)
        if self.worlds.active:
            noisy = [(t.group, key) for key, t in terms_of(self.layout) if t.noise]
            self.worlds.observations({"policy": policy, "privileged": privileged}, noisy, fresh)
        return {"policy": self._out(policy), "privileged": self._out(privileged)}

    def images(self) -> dict[str, Any]:
        """Every camera view of every env, rendered together by the env's renderer:
        `<key>_rgb` (B, H, W, 3) uint8 and, for depth views, `<key>_depth` (B, H, W)
        float32 metres (torch tensors on the device after `use_device_images`)."""
        if not self.views:
            return {}
        if self._rig is None:
            targets = rig_views(self.compiled, self.views)
            self._rig = self.handler.camera_rig(
                targets, self.renderer, self.raytrace, self.backgrounds
            )
        frames = device_frames(self._rig) if self.device_images else self._rig.render()
        return image_dict(self.views, frames)

    def use_device_images(self) -> str:
        """Images as torch tensors on the device of the physics and the rig, no host copy
        (metasim.envs.device_images); "" when switched, else why not (host arrays)."""
        why = device_refusal(self.backend, self.renderer, self.worlds.envelope)
        self.device_images = not why
        return why

    # ------------------------------------------------------------ runtime perturbations

    @property
    def noise(self) -> RuntimeNoise:
        """The runtime noise of the envs: each field's largest value over them."""
        return self.worlds.envelope

    def select_backgrounds(
        self, env_ids: Sequence[int] | np.ndarray, groups: Sequence[int]
    ) -> None:
        """Worlds `env_ids` draw the splat groups `groups` of `self.backgrounds` (given before
        the first observation with cameras, render=warp) from the next render on."""
        ids = self.backgrounds.world_group.copy()
        ids[np.asarray(env_ids, dtype=int)] = groups
        select = getattr(self._rig, "select_backgrounds", None)
        if select is None:  # no rig yet: the rig is made with these groups
            self.backgrounds.select([], ids)
        else:
            select(ids)

    def set_noise(self, env_ids: Sequence[int] | np.ndarray, noise: Sequence[RuntimeNoise]) -> None:
        """Give the envs `env_ids` these runtime noises from their next reset on."""
        self.worlds.set(env_ids, noise)

    def _out(self, value: Any) -> Any:
        return as_array_type(value, self.array_type, self.device)

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        cam = self.cameras[0] if self.cameras else self.compiled.model.camera(0).name
        return self.handler.render(cam)

    def close(self, **kwargs: Any) -> None:
        self.handler.close()
