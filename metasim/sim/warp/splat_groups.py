"""Scanned backgrounds in the warp rig: Gaussian splat groups, one per background, and
which group each world draws.

MuJoCo Warp's render context holds every splat of every group in one BVH (`splat_adr`:
each group's first splat) and draws, per world, the group its `splat_group_root` entry
names, composited with the meshes (a mesh in front of a splat hides it). `SplatGroups`
builds the context's splat arguments from a list of `Splats` (in the scene frame) and a
group per world, and can change the worlds' groups later without rebuilding the BVH
(`select`: one copy of nworld ints). Where a scene names a mesh fallback of its
background, the context is made from a copy of the model in which the fallback's geoms
are in a geom group the ray tracer does not draw (`hidden_model`); the physics model is
not touched.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import warp as wp
from mujoco_warp._src.bvh import compute_bvh_group_roots

from metasim.scene.background import load_background
from metasim.scene.render_schema import BackgroundSpec
from metasim.scene.schema import Scene
from metasim.splats import Splats

# A geom group outside the ray tracer's enabled ones (0, 1, 2): geoms moved there are not drawn.
HIDDEN_GROUP = 5


def hidden_model(model: mujoco.MjModel, geoms: np.ndarray) -> mujoco.MjModel:
    """`model`, or a copy of it whose `geoms` the ray tracer does not draw."""
    if not len(geoms):
        return model
    out = copy.copy(model)
    out.geom_group[geoms] = HIDDEN_GROUP
    return out


class SplatGroups:
    """`groups` (each a background's splats, scene frame) and `world_group` (nworld,):
    the group each world draws; `fallback`: the object (a background's mesh fallback)
    the rig hides, or None."""

    def __init__(
        self, groups: Sequence[Splats], world_group: Sequence[int], fallback: str | None = None
    ) -> None:
        if not groups or any(len(g) == 0 for g in groups):
            raise ValueError("every splat group needs at least one splat")
        self.groups = list(groups)
        self.world_group = self._checked(world_group)
        self.fallback = fallback
        self._roots: list[np.ndarray] = []  # per context: the BVH root of each group

    def _checked(self, world_group: Sequence[int]) -> np.ndarray:
        ids = np.asarray(world_group, dtype=np.int32).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= len(self.groups)):
            last = len(self.groups) - 1
            raise ValueError(f"world groups {ids.tolist()} name a group outside 0..{last}")
        return ids

    def arguments(self) -> dict[str, np.ndarray]:
        """The splat keyword arguments of `mujoco_warp.create_render_context`."""
        sizes = [len(g) for g in self.groups]
        return {
            "splat_position": np.concatenate([g.position for g in self.groups]),
            "splat_rotation": np.concatenate([g.rotation for g in self.groups]),
            "splat_scale": np.concatenate([g.scale for g in self.groups]),
            "splat_rgba": np.concatenate([g.rgba for g in self.groups]),
            "splat_adr": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32),
            "splat_group_id": self.world_group.copy(),
        }

    def attach(self, rc: Any) -> None:
        """Remember the group roots of context `rc` (made with `arguments()`)."""
        roots = wp.empty(len(self.groups), dtype=int)
        wp.launch(compute_bvh_group_roots, dim=len(self.groups), inputs=[rc.splat_bvh.id],
                  outputs=[roots])  # fmt: skip
        self._roots.append(roots.numpy().copy())

    def select(self, contexts: Sequence[Any], world_group: Sequence[int]) -> None:
        """Each world draws group `world_group[w]` from the next render on."""
        ids = self._checked(world_group)
        if ids.shape != self.world_group.shape:
            raise ValueError(f"need one group per world ({self.world_group.size}), got {ids.size}")
        self.world_group = ids
        for rc, roots in zip(contexts, self._roots, strict=True):
            rc.splat_group_root.assign(roots[ids].astype(np.int32))


def invisible() -> Splats:
    """One splat no ray sees (transparent, tiny, far below the scene): the group of a
    world drawn without a background in a batch whose other worlds have one."""
    return Splats(
        np.array([[0.0, 0.0, -1.0e6]], dtype=np.float32),
        np.array([[1.0, 0.0, 0.0, 0.0]], dtype=np.float32),
        np.full((1, 3), 1.0e-6, dtype=np.float32),
        np.zeros((1, 4), dtype=np.float32),
    )


def background_groups(scenes: Sequence[Scene], base_dir: Path | None) -> SplatGroups | None:
    """The splat groups of a batch whose world w is drawn as `scenes[w]` (e.g. the cells
    of a `background` grid axis, one per world): one group per distinct background, each
    world given its own; None if no scene has a background. Worlds without one draw an
    invisible group. The mesh fallback is hidden only if every world has splats (then
    all must name the same fallback; a context hides a geom in every world or in none)."""
    specs = [s.background for s in scenes]
    if all(b is None for b in specs):
        return None
    distinct: list[BackgroundSpec | None] = []
    for b in specs:
        if b not in distinct:
            distinct.append(b)
    groups = [invisible() if b is None else load_background(b, base_dir) for b in distinct]
    fallbacks = {b.fallback if b is not None else None for b in specs}
    if len(fallbacks) > 1 and None not in specs:
        raise ValueError(
            f"the worlds' backgrounds name different fallbacks: {sorted(map(str, fallbacks))}"
        )
    fallback = None if None in specs else fallbacks.pop()
    return SplatGroups(groups, [distinct.index(b) for b in specs], fallback)


__all__ = ["HIDDEN_GROUP", "SplatGroups", "background_groups", "hidden_model", "invisible"]
