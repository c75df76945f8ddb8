"""The simulator-agnostic handler API that every backend implements.

A handler owns `num_envs` copies of one compiled scene and steps them together.
State is a batch of arrays with the env axis first. One `step` is one control step:
`substeps` physics steps with the control held constant.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import mujoco
import numpy as np

from metasim.gl import check_gl
from metasim.scene.compile import CompiledScene
from metasim.sim.cameras import CameraRig, View, make_rig
from metasim.sim.state import (
    INSTANTS,
    DeviceController,
    Instant,
    Kinematics,
    ModelEdit,
    SimState,
    Substep,
    UnsupportedScene,
    geom_contacts,
)

if TYPE_CHECKING:
    from metasim.scene.render_schema import RaytraceSpec


class Handler(ABC):
    """Base of every backend. Public methods check arguments, then call `_private` ones.

    `supports_substep`: whether `step` can run a host controller every physics substep
    (torque control such as `osc_pose`); `track_contacts`: set it to have `contacts()`
    report each env's active contacts after every step and reset. `set_mocap` moves
    mocap bodies between control steps (mocap-driven arms such as Meta-World's).
    `supports_observe_substep`: whether the backend can take observations inside the
    control step at the scene's instant (`task.observe_substep`, read at construction:
    `kinematics(at="observed")`, `render(observed=True)`); one that cannot refuses such
    a scene.

    Every backend's constructor takes `nthread` (threads stepping the envs; None: the
    backend's default) and sets `self.nthread` to what it uses (1 where the device
    parallelizes), so a caller passes it to any backend (the contract test checks this)."""

    supports_substep = False
    supports_observe_substep = False
    nthread = 1

    def __init__(self, compiled: CompiledScene, num_envs: int) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.compiled = compiled
        self.model = compiled.model
        self.num_envs = num_envs
        self.substeps = compiled.substeps
        self.track_contacts = False
        # the observation instant, the scene's (1-based substep); None: the end of the step
        self.observe_substep = self._observe_instant(compiled.scene.task.observe_substep)
        self._renderers: dict[tuple[int, int, bool], mujoco.Renderer] = {}
        self._rigs: list[CameraRig] = []
        # the last values of each (field, row) edited per env, replayed into a new rig
        self._edits: dict[tuple[str, int], np.ndarray] = {}

    @classmethod
    def launch(cls, compiled: CompiledScene, num_envs: int, **options: object) -> Handler:
        return cls(compiled, num_envs, **options)

    def reset(self, env_ids: np.ndarray | Sequence[int], state: SimState) -> None:
        """Put envs `env_ids` into `state` (a batch of len(env_ids)) and recompute kinematics."""
        ids = np.asarray(env_ids, dtype=np.int64)
        if len(ids) != state.qpos.shape[0]:
            raise ValueError(f"{len(ids)} env ids but a state batch of {state.qpos.shape[0]}")
        self._reset(ids, state)

    def step(self, ctrl: np.ndarray, substep: Substep | None = None) -> None:
        """Advance every env by one control step (`substeps` physics steps). ctrl: (B, nu).
        With `substep`, that host controller writes the ctrl of every physics substep."""
        ctrl = np.asarray(ctrl, dtype=np.float64)
        if ctrl.shape != (self.num_envs, self.model.nu):
            raise ValueError(f"ctrl must be {(self.num_envs, self.model.nu)}, got {ctrl.shape}")
        if substep is None:
            self._step(ctrl)
        elif self.supports_substep:
            self._step_with(ctrl, substep)
        else:
            raise UnsupportedScene(
                f"the {type(self).__module__.split('.')[-2]} backend cannot run a controller "
                "every physics substep (torque control such as osc_pose); use backend=mujoco"
            )

    def set_mocap(
        self,
        pos: np.ndarray,
        quat: np.ndarray | None = None,
        mocap_ids: np.ndarray | Sequence[int] | None = None,
    ) -> None:
        """Set every env's mocap targets for the coming `step`s: pos (B, k, 3), quat
        (B, k, 4) (w, x, y, z; None keeps the orientations) of the mocap bodies with mocap
        ids `mocap_ids` (k,) (default all, k = nmocap). Written into the state before the
        physics substeps (as a mocap-driven env writes `data.mocap_pos` before its
        `mj_step`s); `kinematics()` shows them after the next step, `get_state()` at once."""
        m = self.model
        ids = np.arange(m.nmocap) if mocap_ids is None else np.asarray(mocap_ids, dtype=np.int64)
        if len(ids) and (ids.min() < 0 or ids.max() >= m.nmocap):
            raise ValueError(f"mocap ids must be in [0, {m.nmocap}), got {ids.tolist()}")
        pos = np.asarray(pos, dtype=np.float64)
        if pos.shape != (self.num_envs, len(ids), 3):
            raise ValueError(f"mocap pos must be {(self.num_envs, len(ids), 3)}, got {pos.shape}")
        if quat is not None:
            quat = np.asarray(quat, dtype=np.float64)
            if quat.shape != (self.num_envs, len(ids), 4):
                raise ValueError(
                    f"mocap quat must be {(self.num_envs, len(ids), 4)}, got {quat.shape}"
                )
        self._set_mocap(ids, pos, quat)

    def _set_mocap(self, ids: np.ndarray, pos: np.ndarray, quat: np.ndarray | None) -> None:
        raise UnsupportedScene(
            f"the {type(self).__module__.split('.')[-2]} backend cannot move mocap bodies "
            "(mocap_delta actions); use backend=mujoco"
        )

    def contacts(self) -> list[np.ndarray]:
        """Per env, the (n, 2) geom ids of the active contacts (with `track_contacts`)."""
        raise UnsupportedScene(
            f"the {type(self).__module__.split('.')[-2]} backend does not report contacts "
            "(predicates that test touching, e.g. LIBERO's On); use backend=mujoco"
        )

    def get_state(self) -> SimState:
        return self._get_state()

    def set_state(self, state: SimState) -> None:
        self.reset(np.arange(self.num_envs), state)

    def default_state(self, n: int) -> SimState:
        """The model's reference configuration, repeated `n` times."""
        m = self.model
        return SimState(
            time=np.zeros(n),
            qpos=np.tile(m.qpos0, (n, 1)),
            qvel=np.zeros((n, m.nv)),
            act=np.zeros((n, m.na)),
            ctrl=np.zeros((n, m.nu)),
            qacc_warmstart=np.zeros((n, m.nv)),
            mocap_pos=np.tile(m.body_pos[m.body_mocapid >= 0], (n, 1, 1)).reshape(n, m.nmocap, 3),
            mocap_quat=np.tile(m.body_quat[m.body_mocapid >= 0], (n, 1, 1)).reshape(n, m.nmocap, 4),
        )

    def apply(self, edit: ModelEdit) -> None:
        """Change one model field per env (physics perturbations)."""
        values = np.asarray(edit.values, dtype=np.float64)
        if values.shape[0] != self.num_envs:
            raise ValueError(f"values need {self.num_envs} rows (one per env), got {values.shape}")
        if edit.field != "gravity" and not hasattr(self.model, edit.field):
            raise ValueError(f"MjModel has no field {edit.field!r} (nor is it 'gravity')")
        self._apply(edit.field, edit.index, values)
        self._edits[(edit.field, edit.index)] = values
        for rig in self._rigs:  # a ray-traced rig's own per-world model fields
            rig.apply(edit.field, edit.index, values)

    def camera_rig(
        self,
        views: Sequence[View],
        renderer: str = "opengl",
        settings: RaytraceSpec | None = None,
        backgrounds: Any = None,
    ) -> CameraRig:
        """A rig rendering `views` of every env together (`metasim.sim.cameras`): with
        `opengl`, MuJoCo's renderer frame by frame (`render`); with `warp`, MuJoCo Warp's
        ray tracer in one launch, behind the meshes the splat groups `backgrounds` (a
        `SplatGroups`, one per world; None: the scene's background). The handler's later
        per-env model edits reach it."""
        from metasim.scene.render_schema import RaytraceSpec

        rig = make_rig(self, views, renderer, settings or RaytraceSpec(), backgrounds)
        for (field, index), values in self._edits.items():
            rig.apply(field, index, values)
        self._rigs.append(rig)
        return rig

    def release_rig(self, rig: CameraRig) -> None:
        """Close a rig made by `camera_rig` (no more edits reach it)."""
        if rig in self._rigs:
            self._rigs.remove(rig)
        rig.close()

    def kinematics(self, at: Instant = "forward") -> Kinematics:
        """The joint state and poses of one instant of the last control step (after a
        reset, the reset state's at every instant): read-only views the handler updates
        in place. `at` (`INSTANTS`; a scene names the ones it reads, e.g.
        `task.success_reads`):

        - "forward": after the step, the kinematics computed forward from its final state.
        - "step": what success predicates read: body and site poses of ONE physics state,
          the state the last physics substep started from, whose collision pass
          `contacts()` reports; qpos and qvel after that substep. It is what MuJoCo's data
          holds right after mj_step, and what robosuite's env.step leaves for LIBERO's
          `_check_success` (it calls no mj_forward after the last substep).
        - "observed": the scene's observation instant (`task.observe_substep`); without
          one, "forward"'s.

        A backend that keeps no copy of an instant gives "forward"'s (and then reports
        contacts of that same state)."""
        if at not in INSTANTS:
            raise ValueError(f"kinematics at must be one of {INSTANTS}, got {at!r}")
        return self._kinematics(at)

    @abstractmethod
    def _kinematics(self, at: Instant) -> Kinematics: ...

    def _observe_instant(self, substep: int | None) -> int | None:
        """The scene's observation instant `substep` (`task.observe_substep`), checked:
        `kinematics(at="observed")` and `render(observed=True)` then show what MuJoCo's
        data holds right after that substep's mj_step in every control step (joint state
        after `substep` substeps; body, site and camera poses of the state the substep
        started from, which mj_step computes before integrating); after a reset, the reset
        state's. None: the end of the step (`kinematics()`), which costs nothing extra.
        LIBERO asks for 24 of 25, robosuite's instant."""
        if substep is None:
            return None
        if not 1 <= substep <= self.substeps:
            raise ValueError(
                f"observe_substep must be in [1, {self.substeps}] (the control step's "
                f"physics substeps), got {substep}"
            )
        if not self.supports_observe_substep:
            raise UnsupportedScene(
                f"the {type(self).__module__.split('.')[-2]} backend observes only at "
                f"the end of a control step; this scene observes after physics substep "
                f"{substep} of {self.substeps} (task.observe_substep); use backend=mujoco"
            )
        return substep

    @abstractmethod
    def site_jacobian(self, site: int) -> np.ndarray:
        """(B, 6, nv): translational rows then rotational rows, world frame."""

    def render(
        self,
        camera: str,
        env_ids: Sequence[int] | None = None,
        width: int | None = None,
        height: int | None = None,
        depth: bool = False,
        observed: bool = False,
    ) -> np.ndarray:
        """(len(env_ids), H, W, 3) uint8 images from the named camera, rendered by
        MuJoCo's renderer (EGL/OSMesa offscreen) whatever the backend; with `depth`,
        (len(env_ids), H, W) float32 depth in metres instead. With `observed`, of the
        observation instant (`task.observe_substep`; without one, the current state)."""
        if self.compiled.untextured:
            raise UnsupportedScene(
                f"scene {self.compiled.scene.name!r} was prebuilt without its textures "
                "(for state-only runs): its cameras would not show the benchmark's images; "
                "prebuild it with textures to render"
            )
        cam = self.model.camera(camera)
        w = width or self.compiled.camera_size(camera)[0]
        h = height or self.compiled.camera_size(camera)[1]
        key = (w, h, depth)
        if key not in self._renderers:
            check_gl(os.environ)  # NoOpenGL with a hint where metasim found no OpenGL
            self._renderers[key] = mujoco.Renderer(self.model, height=h, width=w)
            if depth:
                self._renderers[key].enable_depth_rendering()
        renderer = self._renderers[key]
        frames = []
        try:
            for i in range(self.num_envs) if env_ids is None else env_ids:
                m, d = self._render_data(int(i), observed and self.observe_substep is not None)
                mujoco.mj_camlight(m, d)
                renderer.update_scene(d, camera=cam.id)
                frames.append(renderer.render().copy())
        finally:
            self._rendered()
        out = np.stack(frames)
        return out.astype(np.float32) if depth else out

    @abstractmethod
    def _render_data(
        self, env: int, observed: bool = False
    ) -> tuple[mujoco.MjModel, mujoco.MjData]:
        """A native model and data holding env `env`'s state with kinematics computed
        (with `observed`, the poses of the observation instant)."""

    def _rendered(self) -> None:  # noqa: B027  (a hook: most backends need none)
        """Hook: `render` has taken the frames it asked `_render_data` for."""

    @abstractmethod
    def _reset(self, env_ids: np.ndarray, state: SimState) -> None: ...

    @abstractmethod
    def _step(self, ctrl: np.ndarray) -> None: ...

    def _step_with(self, ctrl: np.ndarray, substep: Substep) -> None:
        raise NotImplementedError  # only backends with supports_substep

    @abstractmethod
    def _get_state(self) -> SimState: ...

    @abstractmethod
    def _apply(self, field: str, index: int, values: np.ndarray) -> None: ...

    def close(self) -> None:
        """Release renderers (backends release their threads too)."""
        for r in self._renderers.values():
            r.close()
        self._renderers.clear()
        for rig in self._rigs:
            rig.close()
        self._rigs.clear()


__all__ = [
    "INSTANTS",
    "DeviceController",
    "Handler",
    "Instant",
    "Kinematics",
    "ModelEdit",
    "SimState",
    "Substep",
    "UnsupportedScene",
    "geom_contacts",
]
