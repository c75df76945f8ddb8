"""robosuite's OSC_POSE as Warp kernels (`osc_substep`, one thread per world, and the
Cholesky inverse it uses), driven by `metasim.control.osc_warp.DeviceOsc`.

Warp's kernel language is Python syntax with Warp's own types, which mypy cannot check
(pyproject.toml exempts this module); the kernel's torques are checked against the numpy
OSC (`metasim.control.osc`) in tests/sim/test_warp_device.py.
"""

from __future__ import annotations

import warp as wp

F64 = wp.float64


@wp.func
def spd_inverse(
    a: wp.array3d[wp.float64],
    w: int,
    size: int,
    chol: wp.array3d[wp.float64],
    out: wp.array3d[wp.float64],
) -> int:
    """out[w] = a[w]⁻¹ (size x size, symmetric positive definite) by Cholesky; 0 when a[w]
    is not positive definite (out is then left unfinished)."""
    for j in range(size):
        s = a[w, j, j]
        for p in range(j):
            s -= chol[w, j, p] * chol[w, j, p]
        if s <= F64(0.0):
            return 0
        dj = wp.sqrt(s)
        chol[w, j, j] = dj
        for i in range(j + 1, size):
            t = a[w, i, j]
            for p in range(j):
                t -= chol[w, i, p] * chol[w, j, p]
            chol[w, i, j] = t / dj
    for c in range(size):
        for i in range(size):
            t = F64(0.0)
            if i == c:
                t = F64(1.0)
            for p in range(i):
                t -= chol[w, i, p] * out[w, p, c]
            out[w, i, c] = t / chol[w, i, i]
        for r in range(size):
            i = size - 1 - r
            t = out[w, i, c]
            for p in range(i + 1, size):
                t -= chol[w, p, i] * out[w, p, c]
            out[w, i, c] = t / chol[w, i, i]
    return 1


@wp.kernel(enable_backward=False)
def osc_substep(
    # the substep and the arm (model constants)
    k: int,
    n: int,
    g: int,
    site: int,
    site_root: int,
    arm_dof: wp.array[int],
    arm_qpos: wp.array[int],
    arm_act: wp.array[int],
    affects: wp.array[wp.float64],
    madr: wp.array2d[int],
    torque_lo: wp.array[wp.float64],
    torque_hi: wp.array[wp.float64],
    grip_act: wp.array[int],
    grip_mid: wp.array[wp.float64],
    grip_half: wp.array[wp.float64],
    grip_step: wp.array[wp.float64],
    gains: wp.vec4d,  # kp, kd, kn, dn
    scales: wp.vec2d,  # pos_scale, rot_scale
    lay: wp.array[int],  # column offsets of the controller row (osc._OFFSETS)
    # the worlds after step1 (float32, as MuJoCo Warp simulates)
    qpos: wp.array2d[float],
    qvel: wp.array2d[float],
    site_xpos: wp.array2d[wp.vec3],
    site_xmat: wp.array2d[wp.mat33],
    subtree_com: wp.array2d[wp.vec3],
    cdof: wp.array2d[wp.spatial_vector],
    mass_csr: wp.array2d[float],
    qfrc_bias: wp.array2d[float],
    # the controller rows, and scratch (float64, as robosuite computes)
    row: wp.array2d[wp.float64],
    jac: wp.array3d[wp.float64],
    mass: wp.array3d[wp.float64],
    minv: wp.array3d[wp.float64],
    jmj: wp.array3d[wp.float64],
    lam: wp.array3d[wp.float64],
    chol: wp.array3d[wp.float64],
    vecs: wp.array2d[wp.float64],
    # out
    ctrl: wp.array2d[float],
):
    w = wp.tid()
    kp, kd, kn, dn = gains[0], gains[1], gains[2], gains[3]
    pending, goal_pos, goal_ori, q0 = lay[0], lay[1], lay[2], lay[3]
    gripper, gripper_input, stale_at, singular = lay[4], lay[5], lay[6], lay[7]
    s_pos, s_mat, s_jac, s_mass, s_q, s_qd = lay[8], lay[9], lay[10], lay[11], lay[12], lay[13]
    stale = row[w, stale_at] > F64(0.5)
    one = F64(1.0)
    half = F64(0.5)

    # the arm as the controller reads it: measured, or the start pose on a stale substep
    xp = site_xpos[w, site]
    xm = site_xmat[w, site]
    ee_pos = wp.vec3d(F64(xp[0]), F64(xp[1]), F64(xp[2]))
    ee_mat = wp.mat33d()
    for a in range(3):
        for b in range(3):
            ee_mat[a, b] = F64(xm[a, b])
    if stale:
        ee_pos = wp.vec3d(row[w, s_pos], row[w, s_pos + 1], row[w, s_pos + 2])
        for a in range(3):
            for b in range(3):
                ee_mat[a, b] = row[w, s_mat + 3 * a + b]
    # vecs[w]: q (n) | qd (n) | task velocity (6) | wrench (6) | pose force (n) | tmp (n)
    vq, vqd, vvel, vwr, vpose, vtmp = 0, n, 2 * n, 2 * n + 6, 2 * n + 12, 3 * n + 12
    offset = xp - subtree_com[w, site_root]
    for i in range(n):
        if stale:
            vecs[w, vq + i] = row[w, s_q + i]
            vecs[w, vqd + i] = row[w, s_qd + i]
            for r in range(6):
                jac[w, r, i] = row[w, s_jac + r * n + i]
            for j in range(n):
                mass[w, i, j] = row[w, s_mass + i * n + j]
        else:
            vecs[w, vq + i] = F64(qpos[w, arm_qpos[i]])
            vecs[w, vqd + i] = F64(qvel[w, arm_dof[i]])
            cd = cdof[w, arm_dof[i]]
            jr = wp.spatial_top(cd)
            jp = wp.spatial_bottom(cd) + wp.cross(jr, offset)
            for r in range(3):
                jac[w, r, i] = F64(jp[r]) * affects[i]
                jac[w, r + 3, i] = F64(jr[r]) * affects[i]
            for j in range(n):
                mass[w, i, j] = F64(mass_csr[w, madr[i, j]])

    # the goal, once per control step
    if k == 0:
        act = wp.vector(dtype=wp.float64, length=7)
        for i in range(7):
            act[i] = wp.clamp(row[w, pending + i], -one, one)
        for a in range(3):
            row[w, goal_pos + a] = ee_pos[a] + scales[0] * act[a]
        rot = wp.vec3d(act[3], act[4], act[5]) * scales[1]
        if rot[0] != F64(0.0) or rot[1] != F64(0.0) or rot[2] != F64(0.0):
            angle = wp.length(rot)
            turn = wp.quat_to_matrix(wp.quat_from_axis_angle(rot / angle, angle)) * ee_mat
            for a in range(3):
                for b in range(3):
                    row[w, goal_ori + 3 * a + b] = turn[a, b]
        row[w, gripper_input] = wp.sign(act[6])

    # task-space command: force and torque
    for r in range(6):
        v = F64(0.0)
        for i in range(n):
            v += jac[w, r, i] * vecs[w, vqd + i]
        vecs[w, vvel + r] = v
    gmat = wp.mat33d()
    for a in range(3):
        for b in range(3):
            gmat[a, b] = row[w, goal_ori + 3 * a + b]
    p = ee_mat * wp.transpose(gmat)
    e_rot = half * wp.vec3d(p[1, 2] - p[2, 1], p[2, 0] - p[0, 2], p[0, 1] - p[1, 0])
    e_pos = wp.vec3d(row[w, goal_pos], row[w, goal_pos + 1], row[w, goal_pos + 2]) - ee_pos
    f_pos = kp * e_pos - kd * wp.vec3d(vecs[w, vvel], vecs[w, vvel + 1], vecs[w, vvel + 2])
    f_rot = kp * e_rot - kd * wp.vec3d(vecs[w, vvel + 3], vecs[w, vvel + 4], vecs[w, vvel + 5])

    # M⁻¹, J M⁻¹ Jᵀ and the task-space inertias
    ok = spd_inverse(mass, w, n, chol, minv)
    for r in range(6):
        for c in range(6):
            v = F64(0.0)
            for i in range(n):
                t = F64(0.0)
                for j in range(n):
                    t += minv[w, i, j] * jac[w, c, j]
                v += jac[w, r, i] * t
            jmj[w, r, c] = v
    lp = wp.mat33d()
    lr = wp.mat33d()
    for a in range(3):
        for b in range(3):
            lp[a, b] = jmj[w, a, b]
            lr[a, b] = jmj[w, a + 3, b + 3]
    wp_ = wp.inverse(lp) * f_pos
    wr_ = wp.inverse(lr) * f_rot
    for a in range(3):
        vecs[w, vwr + a] = wp_[a]
        vecs[w, vwr + 3 + a] = wr_[a]
    ok = ok * spd_inverse(jmj, w, 6, chol, lam)
    row[w, singular] = wp.max(row[w, singular], F64(1 - ok))

    # pose force M (kn (q0 − q) − dn q̇), then τ = Jᵀ wrench + bias + Nᵀ pose with
    # N = I − J̄ J, J̄ = M⁻¹ Jᵀ Λ: Nᵀ pose = pose − Jᵀ (Λ J M⁻¹ pose)
    for i in range(n):
        vecs[w, vtmp + i] = kn * (row[w, q0 + i] - vecs[w, vq + i]) - dn * vecs[w, vqd + i]
    for i in range(n):
        v = F64(0.0)
        for j in range(n):
            v += mass[w, i, j] * vecs[w, vtmp + j]
        vecs[w, vpose + i] = v
    for i in range(n):  # tmp = M⁻¹ pose
        v = F64(0.0)
        for j in range(n):
            v += minv[w, i, j] * vecs[w, vpose + j]
        vecs[w, vtmp + i] = v
    jm = wp.vector(dtype=wp.float64, length=6)  # J M⁻¹ pose
    for r in range(6):
        v = F64(0.0)
        for i in range(n):
            v += jac[w, r, i] * vecs[w, vtmp + i]
        jm[r] = v
    for r in range(6):  # wrench − Λ J M⁻¹ pose
        v = F64(0.0)
        for c in range(6):
            v += lam[w, r, c] * jm[c]
        vecs[w, vwr + r] = vecs[w, vwr + r] - v
    for i in range(n):
        t = F64(qfrc_bias[w, arm_dof[i]]) + vecs[w, vpose + i]
        for r in range(6):
            t += jac[w, r, i] * vecs[w, vwr + r]
        ctrl[w, arm_act[i]] = float(wp.clamp(t, torque_lo[i], torque_hi[i]))
    row[w, stale_at] = F64(0.0)

    # the gripper command moves one step per substep toward the last gripper sign
    for i in range(g):
        moved = row[w, gripper + i] + grip_step[i] * row[w, gripper_input]
        gi = wp.clamp(moved, -one, one)
        row[w, gripper + i] = gi
        ctrl[w, grip_act[i]] = float(grip_mid[i] + grip_half[i] * gi)
