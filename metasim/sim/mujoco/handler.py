"""Native MuJoCo backend: one MjData per env, stepped on a thread pool with the GIL released.

Each worker thread steps a contiguous slice of envs with `mj_step(nstep=substeps)`
(MuJoCo releases the GIL inside), then refreshes kinematics and copies the observables
into shared (B, ...) buffers, so the Python side reads batched arrays and never loops.
"""

from __future__ import annotations

import copy
import itertools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import mujoco
import numpy as np

from metasim.scene.compile import CompiledScene
from metasim.sim.base import Handler, Kinematics, SimState


def default_threads() -> int:
    return int(os.environ.get("METASIM_THREADS", os.cpu_count() or 1))


class BackendHandler(Handler):
    """`num_envs` MjData over one MjModel (or one model copy per env once perturbed)."""

    def __init__(self, compiled: CompiledScene, num_envs: int, nthread: int | None = None) -> None:
        super().__init__(compiled, num_envs)
        m = self.model
        self._models = [m] * num_envs
        self._datas = [mujoco.MjData(m) for _ in range(num_envs)]
        self.nthread = max(1, min(nthread or default_threads(), num_envs))
        self._pool = ThreadPoolExecutor(self.nthread) if self.nthread > 1 else None
        bounds = np.linspace(0, num_envs, self.nthread + 1).astype(int)
        self._slices = [(int(a), int(b)) for a, b in itertools.pairwise(bounds)]
        self.jacobian_sites: tuple[int, ...] = (compiled.index.ee_site,)
        b = num_envs
        self._qpos = np.zeros((b, m.nq))
        self._qvel = np.zeros((b, m.nv))
        self._body_pos = np.zeros((b, m.nbody, 3))
        self._body_quat = np.zeros((b, m.nbody, 4))
        self._site_pos = np.zeros((b, m.nsite, 3))
        self._site_mat = np.zeros((b, m.nsite, 9))
        self._jac = {s: np.zeros((b, 6, m.nv)) for s in self.jacobian_sites}
        self._ctrl = np.zeros((b, m.nu))
        self._renderers: dict[tuple[int, int], mujoco.Renderer] = {}
        self.reset(np.arange(num_envs), self.default_state(num_envs))

    # ------------------------------------------------------------ stepping

    def _refresh(self, i: int) -> None:
        """Kinematics for env i from its current qpos, copied into the batch buffers."""
        m, d = self._models[i], self._datas[i]
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        self._qpos[i] = d.qpos
        self._qvel[i] = d.qvel
        self._body_pos[i] = d.xpos
        self._body_quat[i] = d.xquat
        self._site_pos[i] = d.site_xpos
        self._site_mat[i] = d.site_xmat
        for site, jac in self._jac.items():
            mujoco.mj_jacSite(m, d, jac[i, :3], jac[i, 3:], site)

    def _work(self, lo: int, hi: int) -> None:
        for i in range(lo, hi):
            d = self._datas[i]
            d.ctrl[:] = self._ctrl[i]
            mujoco.mj_step(self._models[i], d, nstep=self.substeps)
            self._refresh(i)

    def _run(self, fn: Callable[[int, int], None]) -> None:
        if self._pool is None:
            fn(0, self.num_envs)
            return
        futures = [self._pool.submit(fn, lo, hi) for lo, hi in self._slices]
        for f in futures:
            f.result()

    def _step(self, ctrl: np.ndarray) -> None:
        self._ctrl[:] = ctrl
        self._run(self._work)

    # ------------------------------------------------------------ state

    def _reset(self, env_ids: np.ndarray, state: SimState) -> None:
        for row, i in enumerate(env_ids):
            d = self._datas[i]
            mujoco.mj_resetData(self._models[i], d)
            d.time = float(state.time[row])
            d.qpos[:] = state.qpos[row]
            d.qvel[:] = state.qvel[row]
            d.act[:] = state.act[row]
            d.ctrl[:] = state.ctrl[row]
            d.qacc_warmstart[:] = state.qacc_warmstart[row]
            d.mocap_pos[:] = state.mocap_pos[row]
            d.mocap_quat[:] = state.mocap_quat[row]
            self._ctrl[i] = state.ctrl[row]
            self._refresh(int(i))

    def _get_state(self) -> SimState:
        ds = self._datas
        return SimState(
            time=np.array([d.time for d in ds]),
            qpos=np.stack([d.qpos for d in ds]),
            qvel=np.stack([d.qvel for d in ds]),
            act=np.stack([d.act for d in ds]).reshape(len(ds), -1),
            ctrl=np.stack([d.ctrl for d in ds]).reshape(len(ds), -1),
            qacc_warmstart=np.stack([d.qacc_warmstart for d in ds]),
            mocap_pos=np.stack([d.mocap_pos for d in ds]).reshape(len(ds), -1, 3),
            mocap_quat=np.stack([d.mocap_quat for d in ds]).reshape(len(ds), -1, 4),
        )

    def kinematics(self) -> Kinematics:
        b = self.num_envs
        return Kinematics(
            qpos=self._qpos,
            qvel=self._qvel,
            body_pos=self._body_pos,
            body_quat=self._body_quat,
            site_pos=self._site_pos,
            site_mat=self._site_mat.reshape(b, -1, 3, 3),
        )

    def site_jacobian(self, site: int) -> np.ndarray:
        if site in self._jac:
            return self._jac[site]
        out = np.zeros((self.num_envs, 6, self.model.nv))
        for i, (m, d) in enumerate(zip(self._models, self._datas, strict=True)):
            mujoco.mj_jacSite(m, d, out[i, :3], out[i, 3:], site)
        return out

    def _apply(self, field: str, index: int, values: np.ndarray) -> None:
        if any(m is self.model for m in self._models):
            self._models = [copy.copy(self.model) for _ in range(self.num_envs)]
        for m, v in zip(self._models, values, strict=True):
            getattr(m, field)[index] = v

    # ------------------------------------------------------------ rendering

    def render(
        self,
        camera: str,
        env_ids: Sequence[int] | None = None,
        width: int | None = None,
        height: int | None = None,
    ) -> np.ndarray:
        cam = self.model.camera(camera)
        w = width or self.compiled.camera_size(camera)[0]
        h = height or self.compiled.camera_size(camera)[1]
        key = (w, h)
        if key not in self._renderers:
            self._renderers[key] = mujoco.Renderer(self.model, height=h, width=w)
        renderer = self._renderers[key]
        ids = range(self.num_envs) if env_ids is None else env_ids
        frames = []
        for i in ids:
            m, d = self._models[i], self._datas[i]
            mujoco.mj_camlight(m, d)
            renderer.update_scene(d, camera=cam.id)
            frames.append(renderer.render().copy())
        return np.stack(frames)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
        for r in self._renderers.values():
            r.close()
        self._renderers.clear()
