"""LIBERO's goal predicates as pure functions of state (kinematics and active contacts),
registered as the evaluators of its predicate kinds (metasim.tasks.predicates).

Each check restates LIBERO's (libero/libero/envs/object_states/base_object_states.py,
objects/site_object.py, objects/articulated_objects.py); BDDL atoms map onto them in
`metasim.libero.importer.goals`:
- On(A, B) with B an object: `resting_on` (B's origin not above A's, A touches B, origins
  less than 3 cm apart in x-y).
- On(A, region): `site_on` (A's origin, in the site frame, within the site's x-y half
  sizes and between the site's top face - 5 mm and 10 cm above it; touching the
  region's parent fixture when it has one).
- In(A, region): `site_in` (A's origin strictly inside the site box whose half sizes are
  |R @ size|, its bottom lowered by 1 cm).
- Open/Close/TurnOn/TurnOff: `joint_value` thresholds, combined with any/all.
"""

from __future__ import annotations

import mujoco
import numpy as np

from metasim.libero.kinds.models import JointValue, RestingOn, SiteIn, SiteOn
from metasim.robosuite.success import touching
from metasim.scene.compile import CompiledScene
from metasim.tasks.predicates import PredFn, TaskView, predicate


def subtree_geoms(model: mujoco.MjModel, body: int) -> np.ndarray:
    """(ngeom,) bool: geoms on `body` or on any body below it."""
    inside = np.zeros(model.nbody, dtype=bool)
    inside[body] = True
    for b in range(body + 1, model.nbody):  # parents precede children in MuJoCo's order
        inside[b] = inside[model.body_parentid[b]]
    return inside[model.geom_bodyid]


def _contacts(view: TaskView, kind: str) -> list[np.ndarray]:
    if view.contacts is None:
        raise ValueError(f"the predicate {kind!r} tests contacts: TaskView.contacts is needed")
    return view.contacts


def resting_on(
    pos_a: np.ndarray, pos_b: np.ndarray, touch: np.ndarray, xy_radius: float = 0.03
) -> np.ndarray:
    """(B,) bool. pos_a, pos_b (B, 3) body origins of the object and its support, touch
    (B,) whether they touch."""
    near = np.linalg.norm(pos_a[:, :2] - pos_b[:, :2], axis=-1) < xy_radius
    return (pos_b[:, 2] <= pos_a[:, 2]) & touch & near


def site_on(
    site_pos: np.ndarray,
    site_mat: np.ndarray,
    size: np.ndarray,
    obj_pos: np.ndarray,
    height: float = 0.10,
) -> np.ndarray:
    """(B,) bool: LIBERO's `under`. site_pos (B, 3), site_mat (B, 3, 3), size (3,) box
    half sizes, obj_pos (B, 3). The offset is `mat @ (p - site)` as LIBERO writes it."""
    delta = np.einsum("bij,bj->bi", site_mat, obj_pos - site_pos)
    z_ok = (size[2] - 0.005 < delta[:, 2]) & (delta[:, 2] < size[2] + height)
    return z_ok & np.all(np.abs(delta[:, :2]) < size[:2], axis=-1)


def site_in(
    site_pos: np.ndarray,
    site_mat: np.ndarray,
    size: np.ndarray,
    obj_pos: np.ndarray,
    z_slack: float = 0.01,
) -> np.ndarray:
    """(B,) bool: LIBERO's `in_box`. Half sizes |R @ size| around the site, bottom lowered
    by `z_slack`; strict inequalities."""
    half = np.abs(np.einsum("bij,j->bi", site_mat, size))
    lo = site_pos - half
    lo[:, 2] -= z_slack
    hi = site_pos + half
    return np.all((obj_pos > lo) & (obj_pos < hi), axis=-1)


def joint_value(
    q: np.ndarray, above: float | None, below: float | None, inclusive: bool
) -> np.ndarray:
    """(B,) bool: q (B,) above `above` and below `below` (either may be None)."""
    ok = np.ones(q.shape, dtype=bool)
    if above is not None:
        ok &= q >= above if inclusive else q > above
    if below is not None:
        ok &= q <= below if inclusive else q < below
    return ok


@predicate(RestingOn)
def _resting_on(node: RestingOn, c: CompiledScene) -> PredFn:
    args = node.resting_on
    a, b = c.index.bodies[args.object], c.index.bodies[args.support]
    ga, gb = subtree_geoms(c.model, a), subtree_geoms(c.model, b)

    def fn(v: TaskView) -> np.ndarray:
        touch = np.array([touching(k, ga, gb) for k in _contacts(v, "resting_on")])
        return resting_on(v.kin.body_pos[:, a], v.kin.body_pos[:, b], touch, args.xy_radius)

    return fn


@predicate(SiteOn)
def _site_on(node: SiteOn, c: CompiledScene) -> PredFn:
    args = node.site_on
    a, s = c.index.bodies[args.object], c.index.sites[args.site]
    size = c.model.site_size[s].copy()
    parent = c.index.bodies[args.contact] if args.contact else None
    ga = subtree_geoms(c.model, a)
    gp = subtree_geoms(c.model, parent) if parent is not None else None

    def fn(v: TaskView) -> np.ndarray:
        ok = site_on(v.kin.site_pos[:, s], v.kin.site_mat[:, s], size, v.kin.body_pos[:, a])
        if gp is not None:
            ok &= np.array([touching(k, ga, gp) for k in _contacts(v, "site_on")])
        return ok

    return fn


@predicate(SiteIn)
def _site_in(node: SiteIn, c: CompiledScene) -> PredFn:
    args = node.site_in
    a, s = c.index.bodies[args.object], c.index.sites[args.site]
    size = c.model.site_size[s].copy()

    def fn(v: TaskView) -> np.ndarray:
        pos = v.kin.body_pos[:, a]
        return site_in(v.kin.site_pos[:, s], v.kin.site_mat[:, s], size, pos, args.z_slack)

    return fn


@predicate(JointValue)
def _joint_value(node: JointValue, c: CompiledScene) -> PredFn:
    args = node.joint_value
    try:
        adr = int(c.model.jnt_qposadr[c.model.joint(args.joint).id])
    except KeyError:
        raise ValueError(f"joint_value: the scene has no joint {args.joint!r}") from None
    return lambda v: joint_value(v.kin.qpos[:, adr], args.above, args.below, args.inclusive)
