"""The Warp kernels of the warp backend's handler: the pack kernels that gather what the
host reads after a control step into one array (`pack_poses`, `pack_rest`, `pack_row`),
the static geoms' poses after a per-world model edit (`static_geom_poses`), the camera
rig's site geoms at their sites (`site_geom_poses`), and the
reference acceleration of weld and connect rows without MuJoCo >= 3.7's J̇v term
(`legacy_equality_aref`). Controllers'
kernels live with their controllers (`metasim.control.osc_kernels`).

Warp's kernel language is Python syntax with Warp's own types, which mypy cannot check
(pyproject.toml exempts this module); the kernels' results are checked against native
MuJoCo in tests/sim/test_warp_device.py.
"""

from __future__ import annotations

import warp as wp
from mujoco_warp._src import math as mjmath
from mujoco_warp._src.constraint import _contact_kbimp
from mujoco_warp._src.types import ConstraintType, EqType, vec5


@wp.kernel(enable_backward=False)
def pack_poses(
    nbody: int,
    nsite: int,
    at: int,
    xpos: wp.array2d[wp.vec3],
    xquat: wp.array2d[wp.quat],
    site_xpos: wp.array2d[wp.vec3],
    site_xmat: wp.array2d[wp.mat33],
    out: wp.array2d[float],
):
    """out[w, at:]: body positions, quaternions, site positions and matrices, flat."""
    w = wp.tid()
    o = at
    for b in range(nbody):
        for a in range(3):
            out[w, o + a] = xpos[w, b][a]
        o += 3
    for b in range(nbody):
        for a in range(4):
            out[w, o + a] = xquat[w, b][a]
        o += 4
    for s in range(nsite):
        for a in range(3):
            out[w, o + a] = site_xpos[w, s][a]
        o += 3
    for s in range(nsite):
        for a in range(3):
            for c in range(3):
                out[w, o + 3 * a + c] = site_xmat[w, s][a, c]
        o += 9


@wp.kernel(enable_backward=False)
def pack_row(n: int, at: int, src: wp.array2d[float], out: wp.array2d[float]):
    """out[w, at : at + n] = src[w, :n] (a state row kept inside the step, into the pack)."""
    w = wp.tid()
    for i in range(n):
        out[w, at + i] = src[w, i]


@wp.kernel(enable_backward=False)
def pack_rest(
    nstate: int,
    nv: int,
    site: int,
    body: int,
    root: int,
    at_jac: int,
    at_overflow: int,
    isdofancestor: wp.array2d[int],
    state: wp.array2d[float],
    site_xpos: wp.array2d[wp.vec3],
    subtree_com: wp.array2d[wp.vec3],
    cdof: wp.array2d[wp.spatial_vector],
    overflow: wp.array[int],
    out: wp.array2d[float],
):
    """out[w]: the integration state first; the site's Jacobian (6, nv) at `at_jac`
    (translation rows, then rotation rows, as mj_jacSite); MuJoCo Warp's overflow bits."""
    w = wp.tid()
    for i in range(nstate):
        out[w, i] = state[w, i]
    offset = site_xpos[w, site] - subtree_com[w, root]
    for j in range(nv):
        jp = wp.vec3(0.0)
        jr = wp.vec3(0.0)
        if isdofancestor[body, j] != 0:
            cd = cdof[w, j]
            jr = wp.spatial_top(cd)
            jp = wp.spatial_bottom(cd) + wp.cross(jr, offset)
        for a in range(3):
            out[w, at_jac + a * nv + j] = jp[a]
            out[w, at_jac + (a + 3) * nv + j] = jr[a]
    out[w, at_overflow] = float(overflow[w])


@wp.kernel(enable_backward=False)
def static_geom_poses(
    body_parentid: wp.array[int],
    body_rootid: wp.array[int],
    body_weldid: wp.array[int],
    body_mocapid: wp.array[int],
    body_pos: wp.array2d[wp.vec3],
    body_quat: wp.array2d[wp.quat],
    geom_bodyid: wp.array[int],
    geom_pos: wp.array2d[wp.vec3],
    geom_quat: wp.array2d[wp.quat],
    geom_xpos: wp.array2d[wp.vec3],
    geom_xmat: wp.array2d[wp.mat33],
):
    """World poses of the geoms on bodies welded to the world (MuJoCo Warp computes them
    once, when the Data is made, and its kinematics skip them), from each world's own
    body and geom offsets: after a per-world edit of those offsets (a fixture placed per
    episode) the static geoms move with their bodies, as MuJoCo's mj_kinematics moves
    them. Quaternions in MuJoCo's (w, x, y, z) order, composed with MuJoCo Warp's math."""
    w, g = wp.tid()
    b = geom_bodyid[g]
    if body_weldid[b] != 0 or body_mocapid[body_rootid[b]] != -1:
        return
    pos = geom_pos[w % geom_pos.shape[0], g]
    quat = geom_quat[w % geom_quat.shape[0], g]
    while b != 0:
        bp = body_pos[w % body_pos.shape[0], b]
        bq = body_quat[w % body_quat.shape[0], b]
        pos = bp + mjmath.rot_vec_quat(pos, bq)
        quat = mjmath.mul_quat(bq, quat)
        b = body_parentid[b]
    geom_xpos[w, g] = pos
    geom_xmat[w, g] = mjmath.quat_to_mat(quat)


@wp.kernel(enable_backward=False)
def site_geom_poses(
    first: int,
    sites: wp.array[int],
    site_xpos: wp.array2d[wp.vec3],
    site_xmat: wp.array2d[wp.mat33],
    geom_xpos: wp.array2d[wp.vec3],
    geom_xmat: wp.array2d[wp.mat33],
):
    """Geom `first + k` of every world at the world pose of site `sites[k]` (the warp
    rig's geoms that draw sites, metasim.sim.warp.gl_sites)."""
    w, k = wp.tid()
    s = sites[k]
    geom_xpos[w, first + k] = site_xpos[w, s]
    geom_xmat[w, first + k] = site_xmat[w, s]


@wp.kernel(enable_backward=False)
def legacy_equality_aref(
    opt_timestep: wp.array[float],
    opt_disableflags: int,
    eq_type: wp.array[int],
    eq_solref: wp.array2d[wp.vec2],
    eq_solimp: wp.array2d[vec5],
    nefc: wp.array[int],
    efc_type: wp.array2d[int],
    efc_id: wp.array2d[int],
    efc_pos: wp.array2d[float],
    efc_vel: wp.array2d[float],
    efc_aref: wp.array2d[float],
):
    """Between step1 and step2: each weld and connect row's reference acceleration as
    MuJoCo < 3.7 computed it, aref = -K*I*pos - B*vel, without the J̇v shift MuJoCo Warp
    (like MuJoCo >= 3.7) subtracts; the native backend's `legacy_equality_aref` on the
    device (`physics.equality_jdotv: false`). K, B and I from the row's solref/solimp at
    the impedance position MuJoCo uses for these rows (the norm of the constraint's
    violation over all its rows, which sit together); equality rows have no margin.
    Euler and implicit integrators only (the discrete one scales aref differently)."""
    w, r = wp.tid()
    if r >= nefc[w] or efc_type[w, r] != ConstraintType.EQUALITY:
        return
    eq = efc_id[w, r]
    kind = eq_type[eq]
    if kind != EqType.CONNECT and kind != EqType.WELD:
        return
    first = r
    while first > 0 and efc_id[w, first - 1] == eq:
        if efc_type[w, first - 1] != ConstraintType.EQUALITY:
            break
        first -= 1
    nrow = 3
    if kind == EqType.WELD:
        nrow = 6
    sq = float(0.0)  # noqa: UP018 (a Warp variable the loop changes needs a constructor)
    for i in range(nrow):
        if first + i < nefc[w] and efc_id[w, first + i] == eq:
            sq += efc_pos[w, first + i] * efc_pos[w, first + i]
    kbi = _contact_kbimp(
        opt_disableflags,
        opt_timestep[w % opt_timestep.shape[0]],
        eq_solref[w % eq_solref.shape[0], eq],
        eq_solimp[w % eq_solimp.shape[0], eq],
        wp.sqrt(sq),
        False,
    )
    efc_aref[w, r] = -kbi[0] * kbi[2] * efc_pos[w, r] - kbi[1] * efc_vel[w, r]


# The warp rig's frames resolved on the device (metasim.sim.warp.frames).


@wp.func
def _mean_byte(total: int, count: int) -> wp.uint8:
    """round(total / count), ties to even: `np.rint` of the exact mean."""
    q = total // count
    twice = 2 * (total - q * count)
    if twice > count or (twice == count and q % 2 == 1):
        q += 1
    return wp.uint8(q)


@wp.kernel
def resolve_rgb(
    packed: wp.array2d(dtype=wp.uint32),
    adr: int,
    width: int,
    n: int,
    out: wp.array4d(dtype=wp.uint8),
):
    world, y, x = wp.tid()
    acc = wp.vec3i(0, 0, 0)  # R, G, B sums
    row = width * n
    for dy in range(n):
        for dx in range(n):
            p = int(packed[world, adr + (y * n + dy) * row + x * n + dx])
            acc += wp.vec3i((p >> 16) & 0xFF, (p >> 8) & 0xFF, p & 0xFF)
    count = n * n
    for c in range(3):
        out[world, y, x, c] = _mean_byte(acc[c], count)


@wp.kernel
def resolve_depth(
    depth: wp.array2d(dtype=wp.float32),
    adr: int,
    width: int,
    n: int,
    out: wp.array3d(dtype=wp.float32),
):
    world, y, x = wp.tid()
    out[world, y, x] = depth[world, adr + (y * n) * (width * n) + x * n]  # first sub-pixel
