"""MJX backend handler: `num_envs` envs as one batched `mjx.Data`, stepped by one jitted,
vmapped function (see `batch.py`), with the handler API of `metasim.sim.base`.

The batched data and model stay on the JAX device; after a step or reset the
observables the env reads (joint state, body and site poses, the end-effector site's
Jacobian) come back to numpy in one transfer when first read, or go to torch without a
copy through DLPack (`kinematics_dlpack`). Rendering copies an env's state into a
native `MjData` and uses MuJoCo's renderer, so images match the native backend's (for a
scene with collision stand-ins, see `support`, images show the original geoms).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from metasim.scene.compile import CompiledScene
from metasim.sim.base import Handler
from metasim.sim.mjx import batch
from metasim.sim.mjx.support import CYLINDER_SIDES, StandIn, put_model
from metasim.sim.state import Instant, Kinematics, SimState

IMPLS = ("jax", "warp")


def resolve_impl(impl: str) -> str:
    """`impl` if this install can run it: "warp" needs the warp package and a GPU."""
    if impl not in IMPLS:
        raise ValueError(f"unknown MJX impl {impl!r}; expected one of {IMPLS}")
    if impl == "warp":
        has_gpu = any(d.platform == "gpu" for d in jax.devices())
        if importlib.util.find_spec("warp") is None or not has_gpu:
            raise ValueError('MJX impl="warp" needs the warp package and a GPU; use impl="jax"')
    return impl


class BackendHandler(Handler):
    """Batched MJX envs. Options: `impl` ("jax" or "warp"); `cylinder_sides`: sides of the
    convex prism that stands in for a cylinder MJX cannot collide (see
    `metasim.sim.mjx.support`; 0: no stand-ins, such scenes are refused); `nthread` is
    accepted for compatibility with the native backend and ignored (XLA picks its own
    threads).

    `stand_ins` lists the geoms simulated with a stand-in (empty for most scenes) and
    `physics_model` is the MjModel MJX simulates; `model` stays the scene's own, which
    rendering and the site Jacobians use."""

    def __init__(
        self,
        compiled: CompiledScene,
        num_envs: int,
        impl: str = "jax",
        nthread: int | None = None,
        cylinder_sides: int = CYLINDER_SIDES,
    ) -> None:
        super().__init__(compiled, num_envs)
        self.cache_dir = batch.configure_jax()
        self.impl = resolve_impl(impl)
        self.nthread = 1
        self.ee_site = compiled.index.ee_site
        mx, phys = put_model(compiled, self.impl, cylinder_sides)
        self.physics_model: mujoco.MjModel = phys.model
        self.stand_ins: tuple[StandIn, ...] = phys.stand_ins
        self._mx, axes = batch.batch_model(mx, num_envs)
        self._blank = batch.match_step_dtypes(mx, mjx.make_data(mx, impl=self.impl))
        self._data = jax.tree_util.tree_map(
            lambda x: jnp.broadcast_to(x, (num_envs, *x.shape)), self._blank
        )
        self._step_fn = batch.make_step(axes, self.substeps, self.ee_site)
        self._reset_fn = batch.make_reset(axes, self.ee_site)
        self._obs_dev: batch.Obs = ()
        self._obs_host: tuple[np.ndarray, ...] | None = None
        self._step_host: tuple[np.ndarray, ...] | None = None
        self._scratch = mujoco.MjData(self.model)
        self.reset(np.arange(num_envs), self.default_state(num_envs))

    # ------------------------------------------------------------ stepping and state

    def _take(self, data: mjx.Data, obs: batch.Obs) -> None:
        self._data = data
        self._obs_dev = obs
        self._obs_host = None  # fetched when first read (`kinematics_dlpack` needs no copy)
        self._step_host = None

    @property
    def _obs(self) -> tuple[np.ndarray, ...]:
        if self._obs_host is None:
            got = jax.device_get(self._obs_dev[: batch.N_OBS])
            self._obs_host = tuple(np.asarray(x) for x in got)
        return self._obs_host

    def _step(self, ctrl: np.ndarray) -> None:
        self._take(*self._step_fn(self._mx, self._data, jnp.asarray(ctrl)))

    def _set_mocap(self, ids: np.ndarray, pos: np.ndarray, quat: np.ndarray | None) -> None:
        """Replace the targets in the batched data on the device (the next `_step_fn`
        reads them in every substep)."""
        d = self._data
        new = {"mocap_pos": d.mocap_pos.at[:, ids].set(jnp.asarray(pos))}
        if quat is not None:
            new["mocap_quat"] = d.mocap_quat.at[:, ids].set(jnp.asarray(quat))
        self._data = d.replace(**new)

    def _reset(self, env_ids: np.ndarray, state: SimState) -> None:
        b = self.num_envs
        current = self._get_state()
        mask = np.zeros(b, dtype=bool)
        mask[env_ids] = True
        fields = {}
        for name in batch.STATE_FIELDS:
            full = getattr(current, name).copy()
            full[env_ids] = np.asarray(getattr(state, name)).reshape(full[env_ids].shape)
            fields[name] = jnp.asarray(full)
        self._take(*self._reset_fn(self._mx, self._data, self._blank, fields, jnp.asarray(mask)))

    def _get_state(self) -> SimState:
        d = self._data
        values = jax.device_get({name: getattr(d, name) for name in batch.STATE_FIELDS})
        return SimState(**{name: np.array(v, dtype=np.float64) for name, v in values.items()})

    def _kinematics(self, at: Instant) -> Kinematics:
        if at == "step":
            return self._step_kinematics()
        # (no observation instant here: the base refuses a scene with one)
        qpos, qvel, xpos, xquat, site_pos, site_mat, _ = self._obs
        b = self.num_envs
        return Kinematics(
            qpos=qpos,
            qvel=qvel,
            body_pos=xpos,
            body_quat=xquat,
            site_pos=site_pos,
            site_mat=site_mat.reshape(b, -1, 3, 3),
        )

    def _step_kinematics(self) -> Kinematics:
        if self._step_host is None:
            got = jax.device_get(self._obs_dev[batch.N_OBS :])
            self._step_host = tuple(np.asarray(x) for x in got)
        xpos, xquat, site_pos, site_mat = self._step_host
        qpos, qvel = self._obs[:2]
        b = self.num_envs
        return Kinematics(qpos, qvel, xpos, xquat, site_pos, site_mat.reshape(b, -1, 3, 3))

    def kinematics_dlpack(self) -> dict[str, Any]:
        """The current `Kinematics` fields (plus "ee_jacobian", (B, 6, nv)) as torch tensors
        that share the JAX arrays' memory through DLPack: no copy, on the JAX device (CPU
        here; CUDA when JAX runs on a GPU). Treat them as read-only: they alias JAX's
        immutable buffers. They stay valid after later steps (each step makes new arrays).
        Needs torch."""
        import torch

        qpos, qvel, xpos, xquat, site_pos, site_mat, jac = self._obs_dev[: batch.N_OBS]
        b = self.num_envs
        return {
            "qpos": torch.from_dlpack(qpos),
            "qvel": torch.from_dlpack(qvel),
            "body_pos": torch.from_dlpack(xpos),
            "body_quat": torch.from_dlpack(xquat),
            "site_pos": torch.from_dlpack(site_pos),
            "site_mat": torch.from_dlpack(site_mat).reshape(b, -1, 3, 3),
            "ee_jacobian": torch.from_dlpack(jac),
        }

    def site_jacobian(self, site: int) -> np.ndarray:
        """(B, 6, nv). The end-effector site's comes with every step; others are computed
        on the host from the native model (per-env model edits do not change Jacobians
        of the kinematic tree, which depend on positions only)."""
        if site == self.ee_site:
            return self._obs[6]
        m, d = self.model, self._scratch
        out = np.zeros((self.num_envs, 6, m.nv))
        for i in range(self.num_envs):
            d.qpos[:] = self._obs[0][i]
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_jacSite(m, d, out[i, :3], out[i, 3:], site)
        return out

    def _apply(self, field: str, index: int, values: np.ndarray) -> None:
        if field not in batch.BATCHED_FIELDS:
            raise ValueError(
                f"the mjx backend perturbs only {sorted(batch.BATCHED_FIELDS)}, not {field!r}"
            )
        self._mx = batch.set_field(self._mx, field, index, values)

    def model_field(self, field: str) -> np.ndarray:
        """(B, ...) per-env values of a batched model field (see `batch.BATCHED_FIELDS`)."""
        return batch.get_field(self._mx, field)

    # ------------------------------------------------------------ rendering

    def render(
        self,
        camera: str,
        env_ids: Sequence[int] | None = None,
        width: int | None = None,
        height: int | None = None,
        depth: bool = False,
        observed: bool = False,
    ) -> np.ndarray:
        self._render_state = self._get_state()  # one device-to-host copy per call
        return super().render(camera, env_ids, width, height, depth, observed)

    def _render_data(
        self, env: int, observed: bool = False
    ) -> tuple[mujoco.MjModel, mujoco.MjData]:
        del observed  # no observation instant inside the step (supports_observe_substep)
        m, d = self.model, self._scratch
        state = self._render_state
        d.qpos[:] = state.qpos[env]
        d.mocap_pos[:] = state.mocap_pos[env]
        d.mocap_quat[:] = state.mocap_quat[env]
        mujoco.mj_kinematics(m, d)
        return m, d
