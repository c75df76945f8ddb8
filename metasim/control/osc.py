"""`osc_pose`: operational-space control of a torque-driven arm, as robosuite 1.4's OSC_POSE
runs when LIBERO configures it (robosuite `controllers/osc.py`, `base_controller.py`,
`controllers/config/osc_pose.json`; the equations follow Khatib 1987). Written from those
facts, batched over envs with numpy.

Per control step (20 Hz) the action (B, 7) in [-1, 1] sets a goal once:
    goal_pos = p + 0.05 * a[:3]                       (m, world frame)
    goal_ori = exp(0.5 * a[3:6]) @ R                  (rotation vector, world frame)
where p, R are the end-effector site's current position and orientation. As in robosuite,
the orientation goal is kept from the previous step when all three rotation inputs are
exactly zero. Per physics substep (0.002 s, 25 per control step) the torque is
    τ = Jpᵀ Λp (kp e_p − kd v) + Jrᵀ Λr (kp e_r − kd ω) + bias + Nᵀ M (kn (q0 − q) − dn q̇)
with Λp = (Jp M⁻¹ Jpᵀ)⁺, Λr = (Jr M⁻¹ Jrᵀ)⁺ (position and orientation uncoupled),
e_r = ½ Σ_i r_i × r_i^goal (columns of the current and goal rotation), critical damping
kd = 2√kp, bias = MuJoCo's qfrc_bias (gravity and Coriolis), null-space projector
N = I − J̄ J with J̄ = M⁻¹ Jᵀ (J M⁻¹ Jᵀ)⁺, kn = 10, dn = 2√kn, q0 the joints at reset;
then clipped to the arm actuators' ctrlrange. The gripper (robosuite's PandaGripper) keeps an
accumulated command g ∈ [−1, 1]² that moves by ±0.01 · sign(a[6]) per substep
(−1 opens, +1 closes); its position actuators get ctrl = mid + half_range · g.

Episode start, as LIBERO runs it: robosuite builds the controller at the robot's reset pose
(`env.reset()`), then LIBERO writes the init state (`set_init_state`) without refreshing the
controller. So the orientation goal starts at the reset pose's orientation, the null-space
target is the reset joints, and the FIRST substep after reset (its goal and its torque,
except the live gravity term) still uses the reset pose's kinematics. `OscPose.reset(...,
stale=True)` reproduces that; `arm_at` computes the reset pose's ArmState.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from metasim.control.linalg import inv, scaled_eye
from metasim.rotations import axis_angle_to_mat

ALL = slice(None)


@dataclass(frozen=True)
class OscConfig:
    """LIBERO's OSC_POSE settings (robosuite's osc_pose.json) and the Panda gripper speed."""

    kp: float = 150.0
    damping_ratio: float = 1.0
    pos_scale: float = 0.05  # m per unit input (output_max / input_max)
    rot_scale: float = 0.5  # rad per unit input
    nullspace_kp: float = 10.0
    gripper_speed: float = 0.01  # per physics substep
    gripper_sign: tuple[float, float] = (-1.0, 1.0)  # PandaGripper: finger 1 closes toward 0

    @property
    def kd(self) -> float:
        return 2.0 * np.sqrt(self.kp) * self.damping_ratio


@dataclass(frozen=True)
class OscIndex:
    """Where the arm lives in the model: qpos/dof addresses of its joints (n,), its torque
    actuators (n,) with their ctrlrange (n, 2), the gripper's actuators (g,) with their
    ctrlrange (g, 2), and the end-effector site."""

    site: int
    arm_qpos: np.ndarray
    arm_dof: np.ndarray
    arm_actuators: np.ndarray
    torque_range: np.ndarray
    gripper_actuators: np.ndarray
    gripper_range: np.ndarray

    @classmethod
    def from_model(
        cls,
        model: mujoco.MjModel,
        site: str,
        arm_joints: Sequence[str],
        gripper_actuators: Sequence[str] = (),
    ) -> OscIndex:
        """Look the arm up by names; each arm joint must be driven by one actuator."""
        jids = [model.joint(n).id for n in arm_joints]
        acts = []
        for j, name in zip(jids, arm_joints, strict=True):
            found = [a for a in range(model.nu) if model.actuator_trnid[a, 0] == j]
            if len(found) != 1:
                raise ValueError(f"joint {name!r} needs exactly one actuator, has {len(found)}")
            acts.append(found[0])
        grip = [model.actuator(n).id for n in gripper_actuators]
        return cls(
            site=model.site(site).id,
            arm_qpos=np.array([model.jnt_qposadr[j] for j in jids]),
            arm_dof=np.array([model.jnt_dofadr[j] for j in jids]),
            arm_actuators=np.array(acts),
            torque_range=np.array(model.actuator_ctrlrange[acts], dtype=np.float64),
            gripper_actuators=np.array(grip, dtype=np.int64),
            gripper_range=np.array(model.actuator_ctrlrange[grip], dtype=np.float64).reshape(-1, 2),
        )


@dataclass
class ArmState:
    """What the controller reads each substep, batched: ee_pos (B, 3), ee_mat (B, 3, 3),
    jac (B, 6, n) (translation rows first, arm dofs only), mass (B, n, n) (arm block of the
    joint-space inertia), bias (B, n) (qfrc_bias), q (B, n), qd (B, n)."""

    ee_pos: np.ndarray
    ee_mat: np.ndarray
    jac: np.ndarray
    mass: np.ndarray
    bias: np.ndarray
    q: np.ndarray
    qd: np.ndarray


def read_arm(
    model: mujoco.MjModel | Sequence[mujoco.MjModel],
    datas: Sequence[mujoco.MjData],
    index: OscIndex,
) -> ArmState:
    """ArmState of each MjData (whose position/velocity stages are computed, e.g. after
    mj_forward or mj_step1); `model` is their model, or one model per data."""
    b, n = len(datas), len(index.arm_dof)
    models = [model] * b if isinstance(model, mujoco.MjModel) else list(model)
    nv = models[0].nv
    jac = np.zeros((b, 6, nv))
    full = np.zeros((b, nv, nv))
    for i, (m, d) in enumerate(zip(models, datas, strict=True)):
        mujoco.mj_jacSite(m, d, jac[i, :3], jac[i, 3:], index.site)
        mujoco.mj_fullM(m, d, full[i])
    dof, site = index.arm_dof, index.site
    if b == 1:  # one env (a backend stepping envs one at a time): no per-env lists
        d = datas[0]
        return ArmState(
            ee_pos=d.site_xpos[site][None].copy(),
            ee_mat=d.site_xmat[site].reshape(1, 3, 3).copy(),
            jac=jac[:, :, dof],
            mass=full[:, dof[:, None], dof[None, :]],
            bias=d.qfrc_bias[dof][None],
            q=d.qpos[index.arm_qpos][None],
            qd=d.qvel[dof][None],
        )
    return ArmState(
        ee_pos=np.array([d.site_xpos[site] for d in datas]),
        ee_mat=np.array([d.site_xmat[site] for d in datas]).reshape(b, 3, 3),
        jac=jac[:, :, dof],
        mass=full[:, dof[:, None], dof[None, :]].reshape(b, n, n),
        bias=np.array([d.qfrc_bias[dof] for d in datas]),
        q=np.array([d.qpos[index.arm_qpos] for d in datas]),
        qd=np.array([d.qvel[dof] for d in datas]),
    )


def arm_at(
    model: mujoco.MjModel, index: OscIndex, qpos: np.ndarray, data: mujoco.MjData | None = None
) -> ArmState:
    """ArmState at configurations qpos (B, nq) with zero velocity (e.g. the reset pose)."""
    d = data or mujoco.MjData(model)
    rows = []
    for q in np.atleast_2d(qpos):
        d.qpos[:] = q
        d.qvel[:] = 0.0
        mujoco.mj_forward(model, d)
        rows.append(read_arm(model, [d], index))
    return ArmState(**{k: np.concatenate([getattr(r, k) for r in rows]) for k in vars(rows[0])})


def orientation_error(goal: np.ndarray, current: np.ndarray) -> np.ndarray:
    """½ Σ_i current[:, i] × goal[:, i] for rotation matrices (B, 3, 3) -> (B, 3).

    With P = current goalᵀ (P[a, b] = Σ_i current[a, i] goal[b, i]), the sum of the column
    cross products is (P[1, 2] − P[2, 1], P[2, 0] − P[0, 2], P[0, 1] − P[1, 0])."""
    p = current @ np.swapaxes(goal, 1, 2)
    return 0.5 * (p[:, _CROSS_A, _CROSS_B] - p[:, _CROSS_B, _CROSS_A])


_CROSS_A, _CROSS_B = np.array([1, 2, 0]), np.array([2, 0, 1])


def _inv_psd(a: np.ndarray) -> np.ndarray:
    """Inverse of a batch of small symmetric matrices (B, k, k); the pseudo-inverse (as
    robosuite uses) only when one is singular: the two agree for invertible matrices, and
    inv is 3x faster than an SVD. Call it under np.errstate(invalid="ignore")."""
    try:
        out = inv(a)
    except np.linalg.LinAlgError:
        return np.asarray(np.linalg.pinv(a))
    if not np.isfinite(np.add.reduce(out, axis=None)):
        return np.asarray(np.linalg.pinv(a))
    return np.asarray(out)


def osc_torques(
    arm: ArmState,
    goal_pos: np.ndarray,
    goal_ori: np.ndarray,
    q0: np.ndarray,
    cfg: OscConfig,
) -> np.ndarray:
    """Unclipped arm torques (B, n) toward goal_pos (B, 3), goal_ori (B, 3, 3); q0 (B, n)
    are the null-space targets."""
    kp, kd = cfg.kp, cfg.kd
    jac = arm.jac
    jt = np.swapaxes(jac, 1, 2)
    vel = (jac @ arm.qd[:, :, None])[:, :, 0]
    err = np.empty_like(vel)  # the task-space command: force (3) and torque (3)
    err[:, :3] = kp * (goal_pos - arm.ee_pos) - kd * vel[:, :3]
    err[:, 3:] = kp * orientation_error(goal_ori, arm.ee_mat) - kd * vel[:, 3:]
    with np.errstate(invalid="ignore"):  # a singular matrix: NaNs, then the pseudo-inverse
        minv = _inv_psd(arm.mass)
        jmj = jac @ minv @ jt  # (B, 6, 6): its diagonal blocks are the position and
        lam_full = _inv_psd(jmj)  # orientation parts, inverted separately (uncoupled)
        lam_pos = _inv_psd(np.ascontiguousarray(jmj[:, :3, :3]))
        lam_ori = _inv_psd(np.ascontiguousarray(jmj[:, 3:, 3:]))
    wrench = np.concatenate(
        [lam_pos @ err[:, :3, None], lam_ori @ err[:, 3:, None]], axis=1
    )  # (B, 6, 1)
    tau = (jt @ wrench)[:, :, 0] + arm.bias
    jbar = minv @ jt @ lam_full
    null = scaled_eye(arm.q.shape[1]) - jbar @ jac
    kn = cfg.nullspace_kp
    pose = arm.mass @ (kn * (q0 - arm.q) - 2.0 * np.sqrt(kn) * arm.qd)[:, :, None]
    return tau + (np.swapaxes(null, 1, 2) @ pose)[:, :, 0]


@dataclass
class OscPose:
    """The `osc_pose` action space for B envs: per-env goal, null-space target and gripper
    command, updated by `set_goal` once per control step and turned into ctrl by `ctrl`
    every substep (robosuite recomputes the torque on every physics step)."""

    index: OscIndex
    num_envs: int
    config: OscConfig = field(default_factory=OscConfig)

    def __post_init__(self) -> None:
        b, n = self.num_envs, len(self.index.arm_dof)
        self.goal_pos = np.zeros((b, 3))
        self.goal_ori = np.tile(np.eye(3), (b, 1, 1))
        self.q0 = np.zeros((b, n))
        g = len(self.index.gripper_actuators)
        self.gripper = np.zeros((b, g))  # accumulated gripper command in [-1, 1]
        self.gripper_input = np.zeros(b)  # sign of the last gripper action
        self.stale = np.zeros(b, dtype=bool)  # next substep uses `start` (see module doc)
        self.pending = np.zeros((b, 7))  # actions held by `command` for `substep`
        rng = self.index.torque_range
        self._torque_lo, self._torque_hi = rng[:, 0].copy(), rng[:, 1].copy()
        grip = self.index.gripper_range
        self._gripper_mid = 0.5 * (grip[:, 0] + grip[:, 1])
        self._gripper_half = 0.5 * (grip[:, 1] - grip[:, 0])
        self._gripper_step = self.config.gripper_speed * np.asarray(self.config.gripper_sign)
        self.start = ArmState(
            ee_pos=np.zeros((b, 3)),
            ee_mat=np.tile(np.eye(3), (b, 1, 1)),
            jac=np.zeros((b, 6, n)),
            mass=np.tile(np.eye(n), (b, 1, 1)),
            bias=np.zeros((b, n)),
            q=np.zeros((b, n)),
            qd=np.zeros((b, n)),
        )

    def reset(
        self,
        env_ids: np.ndarray | Sequence[int],
        start: ArmState,
        gripper: np.ndarray | None = None,
        stale: bool = True,
    ) -> None:
        """Start envs `env_ids` from `start` (one row per id): the arm where the controller
        was built (LIBERO: the robot's reset pose, see `arm_at`). The goal is that pose, the
        null-space target its joints, the gripper command `gripper` (len(ids), g) (default 0,
        as robosuite's gripper model starts). With `stale`, the first substep's goal and
        torque use `start` instead of the measured arm, as robosuite's skipped update does."""
        ids = np.asarray(env_ids)
        self.goal_pos[ids] = start.ee_pos
        self.goal_ori[ids] = start.ee_mat
        self.q0[ids] = start.q
        self.gripper[ids] = 0.0 if gripper is None else gripper
        self.gripper_input[ids] = 0.0
        self.stale[ids] = stale
        for name, rows in vars(start).items():
            getattr(self.start, name)[ids] = rows

    def _effective(self, arm: ArmState, rows: slice) -> ArmState:
        """`arm` (the envs `rows`) with stale envs' rows replaced by their start state
        (bias stays live)."""
        stale = self.stale[rows]
        if not stale.any():
            return arm
        out = ArmState(**{k: v.copy() for k, v in vars(arm).items()})
        for name in ("ee_pos", "ee_mat", "jac", "mass", "q", "qd"):
            getattr(out, name)[stale] = getattr(self.start, name)[rows][stale]
        return out

    def set_goal(self, action: np.ndarray, arm: ArmState, rows: slice = ALL) -> None:
        """New goals of envs `rows` from their actions (R, 7) in [-1, 1] (clipped), relative
        to `arm`'s pose (R rows)."""
        a = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
        count = len(range(self.num_envs)[rows])
        if a.shape != (count, 7):
            raise ValueError(f"osc_pose actions must be ({count}, 7), got {a.shape}")
        arm = self._effective(arm, rows)
        self.goal_pos[rows] = arm.ee_pos + self.config.pos_scale * a[:, :3]
        rot = self.config.rot_scale * a[:, 3:6]
        turn = np.any(rot != 0.0, axis=1)  # robosuite keeps the old goal for an all-zero input
        if turn.any():
            ids = np.arange(self.num_envs)[rows][turn]
            self.goal_ori[ids] = axis_angle_to_mat(rot[turn]) @ arm.ee_mat[turn]
        self.gripper_input[rows] = np.sign(a[:, 6])

    def arm_torques(self, arm: ArmState, rows: slice = ALL) -> np.ndarray:
        """Clipped arm torques (R, n) of envs `rows` for their goals; clears their stale
        flags."""
        eff = self._effective(arm, rows)
        tau = osc_torques(eff, self.goal_pos[rows], self.goal_ori[rows], self.q0[rows], self.config)
        self.stale[rows] = False
        # np.minimum/np.maximum: np.clip's Python wrapper costs more than the clip itself
        return np.minimum(np.maximum(tau, self._torque_lo), self._torque_hi)

    def gripper_ctrl(self, rows: slice = ALL) -> np.ndarray:
        """Advance the gripper command of envs `rows` one substep; their ctrl (R, g)."""
        moved = self.gripper[rows] + self._gripper_step * self.gripper_input[rows, None]
        self.gripper[rows] = np.minimum(np.maximum(moved, -1.0), 1.0)
        return self._gripper_mid + self._gripper_half * self.gripper[rows]

    def ctrl(self, arm: ArmState, out: np.ndarray, rows: slice = ALL) -> np.ndarray:
        """Write one substep's arm torques and gripper ctrl of envs `rows` into `out`
        (R, nu)."""
        out[:, self.index.arm_actuators] = self.arm_torques(arm, rows)
        if len(self.index.gripper_actuators):
            out[:, self.index.gripper_actuators] = self.gripper_ctrl(rows)
        return out

    # -- one env at a time, for a backend that steps envs separately -----------------------
    def command(self, action: np.ndarray) -> None:
        """Hold the actions (B, 7) of the coming control step for `substep`."""
        self.pending[:] = action

    def substep(self, env: int, k: int, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        """Substep k of env `env` (its MjData after mj_step1): set its goal from the held
        action when k == 0, then write its ctrl. Envs are independent, so threads may call
        this for different envs at once."""
        rows = slice(env, env + 1)
        arm = read_arm(model, [data], self.index)
        if k == 0:
            self.set_goal(self.pending[rows], arm, rows)
        out = data.ctrl[None].copy()
        data.ctrl[:] = self.ctrl(arm, out, rows)[0]

    __call__ = substep  # the handler's per-env Substep

    def on_device(self, backend: str, model: mujoco.MjModel, device_model: Any, device: str) -> Any:
        """This controller's device side for `backend` (a `DeviceController`,
        `metasim.sim.base`): the warp backend runs it as a Warp kernel every substep
        (`metasim.control.osc_warp`); None for a backend it has no kernel for."""
        if backend != "warp":
            return None
        from metasim.control.osc_warp import DeviceOsc

        elemid = device_model.M_elemid  # a device array (CUDA refuses implicit host copies)
        host = elemid.numpy() if hasattr(elemid, "numpy") else np.asarray(elemid)
        return DeviceOsc(model, self, host, device)

    def batch(
        self, k: int, models: Sequence[mujoco.MjModel], datas: Sequence[mujoco.MjData]
    ) -> None:
        """Substep k of every env at once (datas[i]: env i after mj_step1, models[i] its
        model), for a backend that steps all envs substep by substep: the torques of all
        envs in one batched computation instead of one per env."""
        arm = read_arm(models, datas, self.index)
        if k == 0:
            self.set_goal(self.pending, arm)
        out = self.ctrl(arm, np.array([d.ctrl for d in datas]))
        for d, c in zip(datas, out, strict=True):
            d.ctrl[:] = c


def step_osc(
    model: mujoco.MjModel,
    datas: Sequence[mujoco.MjData],
    osc: OscPose,
    action: np.ndarray,
    substeps: int,
) -> None:
    """One control step of B envs (one MjData each): set the goal from `action` (B, 7),
    then `substeps` physics steps, each recomputing the torque (mj_step1, ctrl, mj_step2;
    the same as robosuite's forward, ctrl, mj_step for the Euler integrator)."""
    osc.command(action)
    models = [model] * len(datas)
    for k in range(substeps):
        for d in datas:
            mujoco.mj_step1(model, d)
        osc.batch(k, models, datas)
        for d in datas:
            mujoco.mj_step2(model, d)
