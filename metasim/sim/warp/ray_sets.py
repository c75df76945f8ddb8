"""Per-world camera fields of view in the warp rig: one precomputed ray set per distinct
set of fields of view, and which set each world reads.

MuJoCo Warp precomputes a render context's camera rays once, from the model's `cam_fovy`
(`create_render_context`), so a per-world `cam_fovy` edit does not change the images.
Its own remedy, rays computed in the kernel (`use_precomputed_rays=False`), computes
them with the render kernel's fast math, not bitwise the precomputed ones. Here the
rig's render module (the OpenGL-order copy, `metasim.sim.warp.gl_shading`) reads ray
`ray_world[world] + i` instead of ray `i` (`RAY_EDITS`), and `RaySets` lays the ray
sets end to end in the context's ray arrays: the set of the model's own fields of view
is the context's, the others built by the kernel and the arguments MuJoCo Warp builds
the context's with, so a world whose fields of view are another model's gets exactly
that model's rays. With no edit every world reads set 0 (offset 0): the rays and images
of before. With MuJoCo Warp's own render module (`shading: warp`) an edit switches the
context to rays computed in the kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mujoco
import numpy as np
import warp as wp
from mujoco_warp._src.render_util import _build_rays

# (MuJoCo Warp's line, the edit): the render kernel takes each world's ray offset
RAY_EDITS = (
    ("    ray_base: int,\n", "    ray_base: int,\n    ray_world: wp.array[int],\n"),
    (
        "      ray_dir_local_cam = ray[ray_base + rayid]\n"
        "      ray_offset_local_cam = ray_offset[ray_base + rayid]\n",
        "      ray_dir_local_cam = ray[ray_base + ray_world[worldid] + rayid]\n"
        "      ray_offset_local_cam = ray_offset[ray_base + ray_world[worldid] + rayid]\n",
    ),
    ("        sample * rc.total_rays,\n", "        sample * rc.total_rays,\n        ray_world,\n"),
    (
        "  nsamples = rc.samples_per_pixel * rc.samples_per_pixel\n",
        '  ray_world = getattr(rc, "metasim_ray_world", None)\n'
        "  if ray_world is None:\n"
        "    ray_world = wp.zeros(d.nworld, dtype=int)\n"
        "  nsamples = rc.samples_per_pixel * rc.samples_per_pixel\n",
    ),
)


def build_rays(model: mujoco.MjModel, rc: Any, fovy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ray directions and offsets ((total rays x samples, 3) each) that
    `create_render_context` computes for context `rc` of `model`, with the cameras'
    fields of view `fovy` (ncam,) in place of the model's."""
    n, total = rc.samples_per_pixel, rc.total_rays
    ray = wp.zeros(total * n * n, dtype=wp.vec3)
    offset_out = wp.zeros(total * n * n, dtype=wp.vec3)
    cams, res = rc.cam_id_map.numpy(), rc.cam_res.numpy()
    for sample in range(n * n):
        offset = sample * total
        for idx, cam in enumerate(int(c) for c in cams):
            w, h = int(res[idx][0]), int(res[idx][1])
            size, k = model.cam_sensorsize[cam], model.cam_intrinsic[cam]
            wp.launch(
                _build_rays,
                dim=(w, h),
                inputs=[offset, w, h, int(model.cam_projection[cam]), float(fovy[cam]),
                        wp.vec2(float(size[0]), float(size[1])),
                        wp.vec4(float(k[0]), float(k[1]), float(k[2]), float(k[3])),
                        rc.znear, n, sample % n, sample // n],
                outputs=[ray, offset_out],
            )  # fmt: skip
            offset += w * h
    return ray.numpy(), offset_out.numpy()


class RaySets:
    """Each world's camera fields of view (`fovy` (nworld, ncam), the model's until
    `set`) and, per context, the ray sets they need. `patched`: the contexts render with
    the module that reads `ray_world` (else an edit switches them to in-kernel rays)."""

    def __init__(self, model: mujoco.MjModel, nworld: int, patched: bool) -> None:
        self.model, self.nworld, self.patched = model, nworld, patched
        self.fovy = np.tile(np.asarray(model.cam_fovy, dtype=np.float64), (nworld, 1))
        # per context: its ray sets so far (set 0 the context's own), keyed by the fields
        # of view of its cameras; laid out once, a set kept while the rig lives
        self._sets: dict[int, dict[bytes, tuple[np.ndarray, np.ndarray]]] = {}

    @staticmethod
    def attach(rc: Any, nworld: int) -> None:
        """Context `rc` (made from the model): every world reads its own rays (set 0)."""
        rc.metasim_ray_world = wp.zeros(nworld, dtype=int)

    def set(self, index: int, values: np.ndarray, contexts: Sequence[Any]) -> None:
        """Camera `index`'s field of view in each world is `values` (nworld,) from the
        next render on."""
        self.fovy[:, index] = np.asarray(values, dtype=np.float64).reshape(self.nworld)
        for k, rc in enumerate(contexts):
            if self.patched:
                self._select(k, rc)
            elif not np.array_equal(
                self.fovy, np.broadcast_to(self.model.cam_fovy, self.fovy.shape)
            ):
                rc.use_precomputed_rays = False  # MuJoCo Warp's in-kernel rays
                rc._megakernel = None  # rebuilt at the next render

    def _select(self, k: int, rc: Any) -> None:
        """Each world of context `k` reads the ray set of its fields of view (a new set
        built and the sets laid out again end to end only when one is missing)."""
        cams = rc.cam_id_map.numpy()
        sets = self._sets.get(k)
        if sets is None:  # the context's own rays, before anything is laid out
            own = np.asarray(self.model.cam_fovy, dtype=np.float64)[cams].tobytes()
            sets = self._sets[k] = {own: (rc.ray.numpy(), rc.ray_offset.numpy())}
        keys = [self.fovy[w, cams].tobytes() for w in range(self.nworld)]
        missing = [key for key in dict.fromkeys(keys) if key not in sets]
        for key in missing:
            fovy = np.asarray(self.model.cam_fovy, dtype=np.float64).copy()
            fovy[cams] = np.frombuffer(key, dtype=np.float64)
            sets[key] = build_rays(self.model, rc, fovy)
        if missing:
            rc.ray = wp.array(np.concatenate([r for r, _ in sets.values()]), dtype=wp.vec3)
            rc.ray_offset = wp.array(np.concatenate([o for _, o in sets.values()]), dtype=wp.vec3)
        stride, order = rc.total_rays * rc.samples_per_pixel**2, list(sets)
        rc.metasim_ray_world.assign(
            np.array([order.index(key) * stride for key in keys], dtype=np.int32)
        )


__all__ = ["RAY_EDITS", "RaySets", "build_rays"]
