"""MuJoCo Warp's ray tracer as a camera rig: every view of every env in one launch.

On the warp backend the rig renders from the backend's own device model and data (the
kinematics of the last step or reset are already there; with an observation instant, a
data of that instant's kinematics the backend makes on the device). On any other backend
it keeps a MuJoCo Warp model and a data of `num_envs` worlds of its own: each `render()`
copies the batch's positions (qpos, mocap poses; one host-to-device copy each) into that
data and computes kinematics on the device. A scene whose sites OpenGL draws (Meta-World's)
is traced from a render model with a geom per site (`metasim.sim.warp.gl_sites`), a model
and data of the rig's own on every backend (on the warp backend the positions are copied
on the device from the backend's data). Per-env model edits the handler takes reach
the rig's model as per-world fields (camera poses, lights, colours, fixture poses), so
each world is drawn with its own; a camera's field of view per world reads the
precomputed rays of that field of view (`metasim.sim.warp.ray_sets`). One `mjw.render`
call per view group (the views of distinct cameras, usually all of them), then its
frames resolved on the device (the sub-pixel mean) and one device-to-host copy of each
(none with `render(on_device=True)`: the device arrays). A scene's scanned background
(`background:`) is drawn as Gaussian splats composited with the meshes, its mesh
fallback hidden; each world draws one splat group (`metasim.sim.warp.splat_groups`;
`select_backgrounds` changes which).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import mujoco
import mujoco_warp as mjw
import numpy as np
import warp as wp
from mujoco_warp._src.render_util import texture_pixels

from metasim.scene.background import fallback_geoms, load_background
from metasim.sim.cameras import View
from metasim.sim.state import UnsupportedScene
from metasim.sim.warp.fields import STATIC_POSE_FIELDS, place_static_geoms, set_world_field
from metasim.sim.warp.frames import FrameResolver, host
from metasim.sim.warp.gl_shading import render_module
from metasim.sim.warp.gl_sites import place_site_geoms, with_sites
from metasim.sim.warp.ray_sets import RaySets
from metasim.sim.warp.splat_groups import SplatGroups, hidden_model
from metasim.sim.warp.support import pick_device, put_model
from metasim.sim.warp.trace import prepare_context, scene_glass, trace

if TYPE_CHECKING:
    from metasim.scene.render_schema import RaytraceSpec
    from metasim.sim.base import Handler


Target = tuple[str, int, int]  # camera, width, height: one camera of a render context


def view_groups(views: Sequence[View]) -> list[list[Target]]:
    """The views' targets (a camera at a size; its colour and depth views share it) split
    so that no group names a camera twice (MuJoCo Warp renders each active camera of a
    context once): one group unless a camera is asked at two sizes."""
    groups: list[list[Target]] = []
    for v in views:
        target = (v.camera, v.width, v.height)
        if any(target in g for g in groups):
            continue
        for g in groups:
            if all(t[0] != v.camera for t in g):
                g.append(target)
                break
        else:
            groups.append([target])
    return groups


def single_face_cubes(model: mujoco.MjModel, rc: Any) -> int:
    """Give the context one face of each cube texture whose six faces are the same image
    (returns how many). MuJoCo's OpenGL maps one cube face onto each face of a box;
    MuJoCo Warp samples a cube texture as one 2D image, so a texture stored as six faces
    (height = 6 x width, e.g. LIBERO's `textable`) shows all six squeezed onto every face.
    Textures with distinct faces are left (a remaining difference, docs/rendering.md)."""
    changed = 0
    for tex in range(model.ntex):
        if model.tex_type[tex] != mujoco.mjtTexture.mjTEXTURE_CUBE:
            continue
        pixels = texture_pixels(model, tex)
        h, w, nc = pixels.shape
        if h != 6 * w:
            continue
        faces = pixels.reshape(6, w, w, nc)
        if not all(np.array_equal(faces[0], f) for f in faces[1:]):
            continue
        rgba = np.ones((w, w, 4), dtype=np.float32)
        rgba[..., : min(nc, 4)] = faces[0][..., :4] / 255.0
        data: Any = wp.array(rgba, dtype=float)
        rc.textures_registry[tex] = wp.Texture2D(data, filter_mode=wp.TextureFilterMode.LINEAR)
        changed += 1
    if changed:
        rc.textures = wp.array(rc.textures_registry, dtype=wp.Texture2D)
    return changed


def downsample(bgra: np.ndarray, n: int) -> np.ndarray:
    """(B, H*n, W*n, 4) packed BGRA bytes -> (B, H, W, 3) RGB uint8, each pixel the mean
    of its n x n sub-pixels."""
    rgb = bgra[..., 2::-1]
    if n == 1:
        return np.ascontiguousarray(rgb)
    b, hn, wn, _ = rgb.shape
    blocks = rgb.reshape(b, hn // n, n, wn // n, n, 3).astype(np.float32)
    return np.rint(blocks.mean(axis=(2, 4))).astype(np.uint8)


class WarpRig:
    """The views of `handler`'s envs, ray traced with the settings `settings`; behind
    the meshes, the splat groups `backgrounds` (default: the scene's background, if it
    has one, in every world)."""

    renderer = "warp"

    def __init__(
        self,
        handler: Handler,
        views: Sequence[View],
        settings: RaytraceSpec,
        backgrounds: SplatGroups | None = None,
    ) -> None:
        if handler.compiled.untextured:
            raise UnsupportedScene(
                f"scene {handler.compiled.scene.name!r} was prebuilt without its textures "
                "(for state-only runs): prebuild it with textures to render"
            )
        self.handler = handler
        self.views = tuple(views)
        self.settings = settings
        model = handler.model
        self.nworld = handler.num_envs
        # OpenGL's sites as geoms of a render model (gl_sites): then the rig traces a
        # model and data of its own on every backend
        self._sites = with_sites(model, handler.compiled.spec) if settings.sites else None
        shared: Any = getattr(handler, "device_arrays", None)
        self._device_arrays = shared
        self.shared = shared is not None and self._sites is None
        if self.shared:
            self._wm, self._wd, self.device = shared()
        else:
            drawn = model if self._sites is None else self._sites.model
            self.device = pick_device(None) if shared is None else shared()[2]
            with wp.ScopedDevice(self.device):
                self._wm = put_model(drawn, handler.compiled.scene.name)
                self._wd = mjw.put_data(
                    drawn, mujoco.MjData(drawn), nworld=self.nworld, nconmax=1, njmax=1
                )
        self._groups = view_groups(self.views)
        self.backgrounds = backgrounds or scene_backgrounds(handler)
        fallback = self.backgrounds.fallback if self.backgrounds else None
        drawn = model if self._sites is None else self._sites.model
        self._traced = hidden_model(drawn, fallback_geoms(model, fallback))
        # Anti-aliasing: each camera traced at n x its size in one launch, then averaged
        # over n x n blocks on the host: the same sub-pixel rays as MuJoCo Warp's own
        # samples_per_pixel (images within 56-59 dB of it), which launches the kernel n²
        # times and accumulates with atomic adds: 10-15% slower on Warp's CPU device
        # (16 LIBERO worlds x 2 cameras at 128², 2x2 and 3x3).
        self.ss = settings.samples_per_pixel
        self._glass = scene_glass(self._traced, settings)  # translucent geoms (trace.py)
        opengl = settings.shading == "opengl"
        module = render_module(self._glass is not None) if opengl else None
        self._render = mjw.render if module is None else module.render
        self.shading = "warp" if module is None else "opengl"  # what it renders with
        self._module = module
        self._passes: list[Any] = []  # reflection and translucency, per context (trace.py)
        self._rays = RaySets(self._traced, self.nworld, patched=module is not None)
        with wp.ScopedDevice(self.device):
            self._contexts = [self._context(g) for g in self._groups]
        self._frames = FrameResolver(self.nworld, self.ss, self.device)

    def _context(self, targets: list[Target]) -> Any:
        rc = self._make_context(targets)
        single_face_cubes(self.handler.model, rc)
        model, s = self.handler.model, self.settings
        passes = prepare_context(model, self._wm, rc, s, self._module, self.ss, self._glass)
        self._passes.append(passes)
        RaySets.attach(rc, self.nworld)
        return rc

    def _make_context(self, targets: list[Target]) -> Any:
        s = self.settings
        rgb = [
            any(not v.depth and (v.camera, v.width, v.height) == t for v in self.views)
            for t in targets
        ]
        depth = [
            any(v.depth and (v.camera, v.width, v.height) == t for v in self.views) for t in targets
        ]
        splats = self.backgrounds.arguments() if self.backgrounds else {}
        rc = mjw.create_render_context(
            self._traced,
            nworld=self.nworld,
            cam_res=[(w * self.ss, h * self.ss) for _, w, h in targets],
            render_rgb=rgb,
            render_depth=depth,
            render_seg=False,
            cam_active=[c for c, _, _ in targets],
            use_shadows=s.shadows,
            shadow_light_fraction=s.shadow_fraction,
            samples_per_pixel=1,
            enable_specular=s.specular,
            render_skybox=s.skybox,
            **splats,
        )
        if self.backgrounds:
            self.backgrounds.attach(rc)
        return rc

    def _upload(self) -> None:
        """The batch's positions into the rig's own data, then kinematics on the device:
        those of the scene's observation instant where it has one (the native handler's
        rows of the state the observed substep started from), as the OpenGL rig renders."""
        h, d = self.handler, self._wd
        if self._device_arrays is not None:  # the warp backend's (observed) data, copied
            _, src, _ = self._device_arrays(observed=True)
            wp.copy(d.qpos, src.qpos)
            if h.model.nmocap:
                wp.copy(d.mocap_pos, src.mocap_pos)
                wp.copy(d.mocap_quat, src.mocap_quat)
            self._kinematics()
            return
        rows = getattr(h, "_obs_rows", None)
        if h.observe_substep is None or rows is None or not len(rows):
            rows = getattr(h, "_state", None)
        if rows is None:  # a handler without state rows: its current state
            state = h.get_state()
            qpos, mpos, mquat = state.qpos, state.mocap_pos, state.mocap_quat
        else:
            lay, b = getattr(h, "_layout"), self.nworld  # noqa: B009  (the native handler's)
            qpos = rows[:, lay["qpos"]]
            mpos = rows[:, lay["mocap_pos"]].reshape(b, -1, 3)
            mquat = rows[:, lay["mocap_quat"]].reshape(b, -1, 4)
        d.qpos.assign(np.ascontiguousarray(qpos, dtype=np.float32))
        if h.model.nmocap:
            d.mocap_pos.assign(np.ascontiguousarray(mpos, dtype=np.float32))
            d.mocap_quat.assign(np.ascontiguousarray(mquat, dtype=np.float32))
        self._kinematics()

    def _kinematics(self) -> None:
        """Kinematics of the rig's data on the device, the site geoms at their sites."""
        mjw.kinematics(self._wm, self._wd)
        mjw.com_pos(self._wm, self._wd)
        if self._sites is not None:
            place_site_geoms(self._sites, self._wm, self._wd)

    def render(self, on_device: bool = False) -> list[Any]:
        """Per view, the frames on the host; with `on_device`, the Warp arrays on the
        rig's device that hold them (no copy; overwritten by the next render)."""
        frames: dict[tuple[Target, bool], Any] = {}
        with wp.ScopedDevice(self.device):
            if not self.shared:
                self._upload()
            else:  # the observation instant's kinematics, made on the device (or now's)
                self._wm, self._wd, _ = self._device_arrays(observed=True)
            mjw.camlight(self._wm, self._wd)
            for targets, rc, passes in zip(self._groups, self._contexts, self._passes, strict=True):
                mjw.refit_bvh(self._wm, self._wd, rc)
                trace(self._render, self._wm, self._wd, rc, passes)
                frames.update(self._read(targets, rc, on_device))
        return [frames[((v.camera, v.width, v.height), v.depth)] for v in self.views]

    def _read(
        self, targets: list[Target], rc: Any, on_device: bool = False
    ) -> dict[tuple[Target, bool], Any]:
        """The group's frames, resolved on the device (`frames.FrameResolver`: the
        sub-pixel mean and the RGB unpacking), then one copy of each to the host (none
        `on_device`)."""
        out: dict[tuple[Target, bool], Any] = {}
        keep = (lambda a: a) if on_device else host
        rgb_adr, depth_adr = host(rc.rgb_adr), host(rc.depth_adr)
        for k, t in enumerate(targets):
            if rgb_adr[k] >= 0:
                out[(t, False)] = keep(self._frames.rgb(rc.rgb_data, rgb_adr[k], t))
            if depth_adr[k] >= 0:
                out[(t, True)] = keep(self._frames.depth(rc.depth_data, depth_adr[k], t))
        return out

    def select_backgrounds(self, world_group: Sequence[int]) -> None:
        """World w draws splat group `world_group[w]` from the next render on."""
        if self.backgrounds is None:
            raise ValueError("this rig draws no splat background")
        with wp.ScopedDevice(self.device):
            self.backgrounds.select(self._contexts, world_group)

    def apply(self, field: str, index: int, values: np.ndarray) -> None:
        """A per-env model edit as a per-world field of the rig's model (the warp backend
        set its shared model already); a field of view also picks each world's rays.
        Fields MuJoCo Warp reads once for all worlds do not change the images and are
        left."""
        with wp.ScopedDevice(self.device):
            if field == "cam_fovy":
                self._rays.set(index, values, self._contexts)
            if not self.shared and set_world_field(self._wm, field, index, values, self.nworld):
                if field in STATIC_POSE_FIELDS:
                    place_static_geoms(self.handler.model, self._wm, self._wd)

    def close(self) -> None:
        self._contexts = []


def scene_backgrounds(handler: Handler) -> SplatGroups | None:
    """The scene's background as one splat group drawn by every world, or None."""
    compiled = handler.compiled
    bg = compiled.scene.background
    if bg is None:
        return None
    splats = load_background(bg, compiled.base_dir)
    return SplatGroups([splats], [0] * handler.num_envs, bg.fallback)


__all__ = ["WarpRig", "scene_backgrounds", "view_groups"]
