"""MuJoCo Warp backend handler: `num_envs` worlds of one `mujoco_warp.Data`, stepped by
MuJoCo Warp's kernels on a Warp device (the CPU, or CUDA when Warp sees a GPU).

Device-resident: state, controls, the controller and the quantities the env reads live
on the device. A control step is `substeps` physics steps on the device (with
`osc_pose`, robosuite's OSC as a Warp kernel between each substep's `step1` and `step2`:
`metasim.control.osc_warp`, reached through the controller's `on_device`), then one pack
kernel gathers what the host reads (each world's
integration state, the body and site poses the last substep started from, the poses
after the step, the end-effector Jacobian, MuJoCo Warp's overflow flags) into one (B, K)
array, copied to the host once (a task that tests contacts adds one copy of the contact
list). On CUDA the substeps replay one captured graph. No per-env MuJoCo call is made on
the step path (tests/sim/test_warp_device.py fails if one is). Resets write states on
the device.
Per-env model edits (physics perturbations, LIBERO's per-episode fixture poses) become
per-world model fields (MuJoCo Warp reads a model field with a leading world axis per
world). Camera images: with `render=warp` MuJoCo Warp's ray tracer draws every camera of
every world from this device data (`device_arrays`, `metasim.sim.warp.cameras`); with
`render=opengl` MuJoCo's OpenGL renderer draws the host copy of each env's state.

MuJoCo Warp always applies MuJoCo >= 3.7's J̇v term to weld and connect rows; a scene
with `physics.equality_jdotv: false` (Meta-World's mocap weld, as the package's MuJoCo
3.3.0 steps it) steps through `step1`/`step2` with those rows' reference acceleration
rewritten without the term in between (`kernels.legacy_equality_aref`), as the native
backend does.
"""

from __future__ import annotations

from typing import Any

import mujoco
import mujoco_warp as mjw
import numpy as np
import warp as wp

from metasim.scene.compile import CompiledScene
from metasim.sim.mujoco.host import HostHandler
from metasim.sim.mujoco.legacy import legacy_aref_needed
from metasim.sim.schedule import schedule
from metasim.sim.state import DeviceController, SimState, Substep, UnsupportedScene
from metasim.sim.warp import batch
from metasim.sim.warp.fields import STATIC_POSE_FIELDS, place_static_geoms, set_world_field
from metasim.sim.warp.kernels import pack_poses, pack_rest, pack_row
from metasim.sim.warp.observed import ObservedData
from metasim.sim.warp.support import (
    capacity_overflows,
    check_split_step,
    default_capacity,
    pick_device,
    put_model,
    rewrite_weld_aref,
)


class BackendHandler(HostHandler):
    """Batched MuJoCo Warp worlds. Options: `device` (a Warp device name, default CUDA if
    present else "cpu"); `nconmax` contacts and `njmax` constraint rows per world (default:
    16 and 8 times the scene's reference configuration's, at least 512 and 1,024; a
    step that overflows either raises instead of dropping contacts); `nthread` is
    accepted as every backend's is (the device parallelizes: 1); `graph` (default on) replays
    each control step's substeps as one captured CUDA graph on a CUDA device."""

    supports_substep = True  # a controller with a device side (osc_pose) runs on the device

    def __init__(
        self,
        compiled: CompiledScene,
        num_envs: int,
        device: str | None = None,
        nthread: int | None = None,
        nconmax: int | None = None,
        njmax: int | None = None,
        graph: bool = True,
    ) -> None:
        del nthread  # the device steps every world at once
        super().__init__(compiled, num_envs, 1)  # the host copy: rendering, jacobians
        self.device = pick_device(device)
        model = compiled.model
        # True: the scene asks for weld rows without J̇v, which MuJoCo Warp adds: each
        # substep rewrites their aref between step1 and step2 (_legacy_aref)
        self.legacy_aref = legacy_aref_needed(compiled)
        if self.legacy_aref:
            check_split_step(model)
        default_ncon, default_njmax = default_capacity(model)
        self.nconmax = int(nconmax or default_ncon)
        self.njmax = int(njmax or default_njmax)
        with wp.ScopedDevice(self.device):
            self._wm = put_model(model, compiled.scene.name)
            self._wd = mjw.put_data(
                model,
                mujoco.MjData(model),
                nworld=num_envs,
                nconmax=self.nconmax,
                njmax=self.njmax,
            )
        self._nstate = mujoco.mj_stateSize(model, batch.SPEC)
        nb, ns, nv = model.nbody, model.nsite, model.nv
        poses = 7 * nb + 12 * ns
        self._at_step, self._at_kin = self._nstate, self._nstate + poses
        self._at_jac = self._at_kin + poses
        self._at_overflow = self._at_jac + 6 * nv
        self._wstate = wp.zeros((num_envs, self._nstate), dtype=float, device=self.device)
        self._pack = wp.zeros((num_envs, self._at_overflow + 1), dtype=float, device=self.device)
        # With an observation instant: the pack grows by its poses and the state rows
        # before and after the observed substep (kept in _wobs on the device)
        self._poses, self._at_obs = poses, self._at_overflow + 1
        self._wobs: tuple[Any, Any] | None = None
        self._observed: ObservedData | None = None  # what the warp rig draws then
        self._isdofancestor: Any = wp.array(
            np.asarray(self._wm.body_isdofancestor.numpy())[:, :nv].copy(),
            dtype=int,
            device=self.device,
        )
        self._device_ctl: tuple[Substep, DeviceController] | None = None
        # On CUDA, each control step's substeps (and the controller) replay one captured
        # graph per kind of step (with or without osc_pose); remade after a model edit
        self.graph = graph and self.device.startswith("cuda")
        self._graphs: dict[bool, Any] = {}
        self.singular = np.zeros(num_envs, dtype=bool)  # OSC met a singular J M⁻¹ Jᵀ
        self._observe_on_device()  # before the reset, which fills what it keeps
        self.reset(np.arange(num_envs), self.default_state(num_envs))  # on the device
        if self._observed is not None:  # the static geoms' poses that reset computed
            self._observed.place_static(self._wd)

    # ------------------------------------------------------------ stepping

    def _upload_ctrl(self, ctrl: np.ndarray) -> None:
        self._ctrl[:] = ctrl
        self._wd.ctrl.assign(ctrl.astype(np.float32))

    def _substeps(self, ctl: DeviceController | None) -> None:
        """The control step's schedule (`metasim.sim.schedule`) on the device."""
        m, d = self._wm, self._wd
        obs = self.observe_substep if self._wobs is not None else None
        plan = schedule(self.substeps, obs, self.legacy_aref, ctl is not None, False)
        for op, k in plan.ops:
            if op == "steps":
                for _ in range(k):
                    mjw.step(m, d)
            elif op == "split":
                mjw.step1(m, d)
                if self.legacy_aref:
                    self._rewrite_weld_aref()
                if ctl is not None:
                    ctl.substep(k, d)
                mjw.step2(m, d)
            elif op == "mark":  # the state the observed substep starts from
                mjw.get_state(m, d, self._wobs[0], int(batch.SPEC))  # type: ignore[index]
            else:  # "keep": the data right after it: poses of that state, joints after
                self._pack_poses(self._at_obs, d)
                mjw.get_state(m, d, self._wobs[1], int(batch.SPEC))  # type: ignore[index]

    def _pack_poses(self, at: int, d: Any) -> None:
        args = [self.model.nbody, self.model.nsite, at, d.xpos, d.xquat, d.site_xpos, d.site_xmat]
        wp.launch(pack_poses, dim=self.num_envs, inputs=args, outputs=[self._pack])

    def _observe_on_device(self) -> None:
        """With the scene's observation instant, grow the pack by its columns and keep the
        rows before the observed substep on the device (a reset fills both)."""
        n, b, on = self._nstate, self.num_envs, self.observe_substep is not None
        extra = self._poses + 2 * n if on else 0
        self._wobs, self._observed = None, None
        with wp.ScopedDevice(self.device):
            self._pack = wp.zeros((b, self._at_obs + extra), dtype=float)
            if on:  # the rows before the observed substep: kept by ObservedData
                obs = self._observed = ObservedData(self.model, self._wd, self._wstate)
                self._wobs = (obs.rows, wp.zeros((b, n), dtype=float))
        self._graphs.clear()  # captured with the previous arrays

    def _rewrite_weld_aref(self) -> None:
        """The weld and connect rows' aref without the J̇v term (see the module)."""
        rewrite_weld_aref(self._wm, self._wd, self.num_envs, self.njmax)

    def _control_step(self, ctl: DeviceController | None) -> None:
        """The substeps of one control step: replayed from a CUDA graph when enabled."""
        if not self.graph:
            self._substeps(ctl)
            return
        key = ctl is not None
        graph = self._graphs.get(key)
        if graph is None:
            with wp.ScopedCapture(device=self.device, force_module_load=True) as capture:
                self._substeps(ctl)
            graph = self._graphs[key] = capture.graph
        wp.capture_launch(graph)

    def _step(self, ctrl: np.ndarray) -> None:
        with wp.ScopedDevice(self.device):
            self._upload_ctrl(ctrl)
            self._control_step(None)
            self._read_back(None)

    def _step_with(self, ctrl: np.ndarray, substep: Substep) -> None:
        with wp.ScopedDevice(self.device):
            ctl = self._device_controller(substep)
            self._upload_ctrl(ctrl)
            ctl.upload()
            self._control_step(ctl)
            self.singular |= ctl.download()
            self._read_back(None)

    def _device_controller(self, substep: Substep) -> DeviceController:
        """The device side of the host controller `substep` (made on first use)."""
        held = self._device_ctl
        if held is not None and held[0] is substep:
            return held[1]
        make = getattr(substep, "on_device", None)
        ctl = make("warp", self.model, self._wm, self.device) if make is not None else None
        if ctl is None:
            raise UnsupportedScene(
                "the warp backend runs controllers on the device: "
                f"{type(substep).__name__} has no device side (osc_pose has); a host "
                "controller every substep needs backend=mujoco"
            )
        self._device_ctl = (substep, ctl)
        self._graphs.pop(True, None)  # captured with the previous controller's arrays
        return ctl

    def _read_back(self, env_ids: np.ndarray | None) -> None:
        """Pack and copy what the host reads, once for all worlds, into the host buffers
        (of `env_ids` only, after a reset; then the step poses are the state's own)."""
        m, d, b = self.model, self._wd, self.num_envs
        if env_ids is None:  # the poses the last substep started from, before kinematics
            self._pack_poses(self._at_step, d)
        mjw.kinematics(self._wm, d)
        mjw.com_pos(self._wm, d)
        self._pack_poses(self._at_kin, d)
        if env_ids is None and self._wobs is not None:  # the observed substep's state rows
            at = self._at_obs + self._poses
            for k, src in enumerate(self._wobs):
                wp.launch(pack_row, dim=b, inputs=[self._nstate, at + k * self._nstate, src],
                          outputs=[self._pack])  # fmt: skip
        mjw.get_state(self._wm, d, self._wstate, int(batch.SPEC))
        site = self.compiled.index.ee_site
        body = int(m.site_bodyid[site])
        wp.launch(
            pack_rest,
            dim=b,
            inputs=[
                self._nstate,
                m.nv,
                site,
                body,
                int(m.body_rootid[body]),
                self._at_jac,
                self._at_overflow,
                self._isdofancestor,
                self._wstate,
                d.site_xpos,
                d.subtree_com,
                d.cdof,
                d.overflow,
            ],
            outputs=[self._pack],
        )
        host = self._pack.numpy().astype(np.float64)  # the one copy to the host
        rows = slice(None) if env_ids is None else env_ids
        self._state[rows] = host[rows, : self._nstate]
        kin = self._unpack(host[rows], self._at_kin)
        step = kin if env_ids is not None else self._unpack(host, self._at_step)
        self._qpos[rows] = self._state[rows, self._layout["qpos"]]
        self._qvel[rows] = self._state[rows, self._layout["qvel"]]
        for dst, src in zip(self._batch_buffers[2:], kin, strict=True):
            dst[rows] = src
        for dst, src in zip(self._step_poses, step, strict=True):
            dst[rows] = src
        if self._wobs is not None:
            self._read_observed(host, env_ids)
        jac = host[rows, self._at_jac : self._at_overflow].reshape(-1, 6, m.nv)
        self._jac[site][rows] = jac
        flags = int(np.bitwise_or.reduce(host[rows, self._at_overflow].astype(np.int64)))
        if flags := flags & capacity_overflows():
            raise RuntimeError(
                f"MuJoCo Warp ran out of room on scene {self.compiled.scene.name!r} "
                f"({mjw.OverflowType(flags)!r}: contacts or constraint rows "
                "were dropped, so the physics is not MuJoCo's); launch the warp backend "
                f"with a larger nconmax (now {self.nconmax}) or njmax (now {self.njmax})"
            )
        if self.track_contacts:
            self._read_contacts()

    def _read_observed(self, host: np.ndarray, env_ids: np.ndarray | None) -> None:
        """The observation instant's host copies: after a step from the pack (the state
        rows before and after the observed substep, the poses right after it); after a
        reset of `env_ids`, the reset state's own."""
        if env_ids is not None:
            self._obs_rows[env_ids] = self._state[env_ids]
            for dst, src in zip(self._obs_buffers, self._batch_buffers, strict=True):
                dst[env_ids] = src[env_ids]
            return
        n, at = self._nstate, self._at_obs + self._poses
        self._obs_rows[:] = host[:, at : at + n]
        after = host[:, at + n : at + 2 * n]
        qpos, qvel, *poses = self._obs_buffers
        qpos[:] = after[:, self._layout["qpos"]]
        qvel[:] = after[:, self._layout["qvel"]]
        for dst, src in zip(poses, self._unpack(host, self._at_obs), strict=True):
            dst[:] = src

    def _unpack(self, host: np.ndarray, at: int) -> tuple[np.ndarray, ...]:
        m, n = self.model, host.shape[0]
        nb, ns = m.nbody, m.nsite
        sizes = ((nb, 3), (nb, 4), (ns, 3), (ns, 9))
        out = []
        for count, width in sizes:
            out.append(host[:, at : at + count * width].reshape(n, count, width))
            at += count * width
        return tuple(out)

    def _read_contacts(self) -> None:
        """Each world's active contacts (geom pairs) of the last collision pass."""
        d = self._wd
        count = int(d.nacon.numpy()[0])
        if count > d.naconmax:
            raise RuntimeError(
                f"MuJoCo Warp ran out of contacts ({count} > naconmax={d.naconmax}); "
                "launch the warp backend with a larger nconmax (backend option)"
            )
        geom = d.contact.geom.numpy()[:count].astype(np.int64)
        world = d.contact.worldid.numpy()[:count]
        order = np.argsort(world, kind="stable")
        bounds = np.searchsorted(world[order], np.arange(self.num_envs + 1))
        pairs = geom[order]
        self._contacts = [pairs[bounds[i] : bounds[i + 1]] for i in range(self.num_envs)]

    def _set_mocap(self, ids: np.ndarray, pos: np.ndarray, quat: np.ndarray | None) -> None:
        """Write the targets into the host rows, then every world's mocap arrays on the
        device from those rows (one copy each)."""
        super()._set_mocap(ids, pos, quat)
        b, n, lay = self.num_envs, self.model.nmocap, self._layout
        with wp.ScopedDevice(self.device):
            rows = self._state[:, lay["mocap_pos"]].reshape(b, n, 3)
            self._wd.mocap_pos.assign(rows.astype(np.float32))
            if quat is not None:
                rows = self._state[:, lay["mocap_quat"]].reshape(b, n, 4)
                self._wd.mocap_quat.assign(rows.astype(np.float32))

    # ------------------------------------------------------------ state

    def _reset(self, env_ids: np.ndarray, state: SimState) -> None:
        full = self._state.copy()
        full[env_ids] = self._rows_of(state, len(env_ids))
        self._ctrl[env_ids] = state.ctrl
        active = np.zeros(self.num_envs, dtype=bool)
        active[env_ids] = True
        self.singular[env_ids] = False
        with wp.ScopedDevice(self.device):
            batch.write_state(self._wm, self._wd, full, active)
            self._read_back(np.asarray(env_ids))  # the device holds float32: read it back
            if self._observed is not None:  # the reset state is the observed one
                self._observed.keep(self._wstate, active)
        if self.track_contacts:  # contacts of the reset state itself, as natively
            self._contacts_at_reset(env_ids)

    def _contacts_at_reset(self, env_ids: np.ndarray) -> None:
        """After a reset the native backend reports the contacts of the loaded state;
        here one collision pass on the device gives them (all worlds; kept for env_ids)."""
        keep = list(self._contacts)
        with wp.ScopedDevice(self.device):
            mjw.fwd_position(self._wm, self._wd)
            self._read_contacts()
        fresh, reset = self._contacts, set(env_ids.tolist())
        self._contacts = [fresh[i] if i in reset else keep[i] for i in range(len(keep))]

    # ------------------------------------------------------------ model edits

    def _apply(self, field: str, index: int, values: np.ndarray) -> None:
        """One model field per world on the device (and on the host models used for
        rendering). The field must be one MuJoCo Warp reads per world."""
        with wp.ScopedDevice(self.device):
            if not set_world_field(self._wm, field, index, values, self.num_envs):
                raise UnsupportedScene(
                    f"the warp backend cannot vary {field!r} per env (MuJoCo Warp reads it "
                    "once for every world); run this perturbation on backend=mujoco or mjx"
                )
            if field in STATIC_POSE_FIELDS:
                place_static_geoms(self.model, self._wm, self._wd)
                if self._observed is not None:
                    self._observed.place_static(self._wd)
        self._graphs.clear()  # they hold the replaced array
        super()._apply(field, index, values)  # the host copies the renderer reads

    def device_arrays(self, observed: bool = False) -> tuple[Any, Any, str]:
        """The MuJoCo Warp model and data of the batch and their device (what a camera
        rig renders from, with the kinematics of the last step or reset). With `observed`
        and an observation instant, a data with that instant's kinematics, computed now
        on the device from the rows the step kept (`metasim.sim.warp.observed`)."""
        if observed and self._observed is not None:
            with wp.ScopedDevice(self.device):
                return self._wm, self._observed.update(self._wm), self.device
        return self._wm, self._wd, self.device

    def close(self) -> None:
        self._device_ctl = None
        super().close()


__all__ = ["BackendHandler", "default_capacity"]
