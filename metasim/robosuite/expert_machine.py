"""The robosuite expert's machinery (`policy=robosuite_expert`, expert.py): the privileged
terms it reads (the positions and orientations of the bodies, and the positions of the
joints, that its skill names) and `PhaseMachine`, the per-env phase state that turns a
target grip-site position and closing direction into OSC_POSE actions (xyz x 0.05 m,
axis-angle x 0.5 rad relative to the current pose, world frame), the hand pointing down
(`down_frame`, which LIBERO's expert shares)."""

from __future__ import annotations

from typing import Any

import numpy as np

from metasim.envs.terms import OBS_TERMS, Layout, ObsTerm
from metasim.envs.vec_env import CameraView
from metasim.policies.base import PolicyContext, PolicyOptions
from metasim.policies.conventions import GRIPPERS
from metasim.rotations import mat_to_axis_angle, quat_to_mat
from metasim.scene.schema import ExpertSpec

BODIES, QUATS = "robosuite_expert_bodies", "robosuite_expert_quats"
JOINTS = "robosuite_expert_joints"
SKILLS = ("pick_lift", "pick_place", "open_door")
POS_SCALE, ROT_SCALE = 0.05, 0.5  # OSC_POSE input 1 = 0.05 m, 0.5 rad
POS_GAIN, ROT_GAIN = 2.0, 1.5  # action per unit of error, in input units
RETRIES = 3
HOLD_SLIP = 0.03  # the object has left the hand once it is this far from where it was held
APPROACH, DESCEND, CLOSE, LIFT, CARRY, LOWER, RELEASE, RETREAT = range(8)


def down_frame(closing: np.ndarray) -> np.ndarray:
    """(..., 3, 3) grip-site frames pointing down with the fingers closing along the world
    direction angle `closing` (...): x along the closing, z down (the Panda's home is
    closing = pi/2, along world y)."""
    c, s = np.cos(closing), np.sin(closing)
    z = np.zeros_like(c)
    return np.stack(
        [np.stack([c, s, -z], -1), np.stack([s, -c, z], -1), np.stack([z, z, z - 1], -1)],
        axis=-1,
    )


def door_parts(fixture: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """robosuite's names of a door (`<door>_main`): its panel and latch bodies, its hinge
    and latch joints (robosuite/models/objects/composite_body... door.xml's names)."""
    door = fixture.removesuffix("_main")
    return (f"{door}_door", f"{door}_latch"), (f"{door}_hinge", f"{door}_latch_joint")


def parts(exp: ExpertSpec) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The bodies and joints the expert of `exp` reads."""
    if exp.skill == "open_door":
        assert exp.fixture is not None
        return door_parts(exp.fixture)
    assert exp.object is not None
    return (exp.object, exp.target or exp.object), ()


SCENE_PREFIX = "robosuite_"  # the imported scenes' names (importer/scene.py)


def _spec(layout: Layout) -> ExpertSpec | None:
    """The expert spec of a robosuite scene (other scenes' pick experts are not ours)."""
    exp = layout.compiled.scene.task.expert
    if not layout.compiled.scene.name.startswith(SCENE_PREFIX):
        return None
    if exp is None or exp.skill not in SKILLS:
        return None
    return exp if (exp.fixture if exp.skill == "open_door" else exp.object) else None


def _bodies(layout: Layout) -> np.ndarray:
    exp = _spec(layout)
    assert exp is not None
    return np.array([layout.compiled.model.body(b).id for b in parts(exp)[0]])


def _joints(layout: Layout) -> np.ndarray:
    exp = _spec(layout)
    assert exp is not None
    m = layout.compiled.model
    return np.array([m.jnt_qposadr[m.joint(j).id] for j in parts(exp)[1]], dtype=np.int64)


def _n(layout: Layout, which: int) -> int:
    exp = _spec(layout)
    return 0 if exp is None else len(parts(exp)[which])


OBS_TERMS.register(
    BODIES,
    ObsTerm("privileged", lambda lay: (_n(lay, 0), 3), source="body_pos", index=_bodies,
            applies=lambda lay: _spec(lay) is not None),
)  # fmt: skip
OBS_TERMS.register(
    QUATS,
    ObsTerm("privileged", lambda lay: (_n(lay, 0), 4), source="body_quat", index=_bodies,
            applies=lambda lay: _spec(lay) is not None),
)  # fmt: skip
OBS_TERMS.register(
    JOINTS,
    ObsTerm("privileged", lambda lay: (_n(lay, 1),), source="qpos", index=_joints,
            applies=lambda lay: _n(lay, 1) > 0),
)  # fmt: skip


def capped(vec: np.ndarray, cap: np.ndarray | float) -> np.ndarray:
    """(B, 3) vectors scaled down to norm `cap` (B,) at most."""
    norm = np.linalg.norm(vec, axis=1, keepdims=True)
    return np.asarray(vec * np.minimum(1.0, np.reshape(cap, (-1, 1)) / np.maximum(norm, 1e-9)))


class PhaseMachine:
    """Per-env phase, steps in it, retries and anchor (the grip site where the phase
    began); turns a target pose into OSC_POSE actions. Subclasses write `_plan`."""

    views: tuple[CameraView, ...] = ()  # reads simulator state; renders nothing
    state: tuple[str, ...] = ("phase", "count", "retries", "anchor", "closing", "prev_ee", "hold")

    def __init__(self, ctx: PolicyContext, exp: ExpertSpec) -> None:
        conv = ctx.typed(PolicyOptions).actions
        if conv.space != "osc_pose" or ctx.action_space != "osc_pose":
            raise ValueError("the robosuite_expert drives robosuite's osc_pose controller")
        grip, one = GRIPPERS[conv.gripper], np.ones(1)
        self.open_cmd = float(grip.from_open1(one, one)[0])
        self.close_cmd = float(grip.from_open1(np.zeros(1), one)[0])
        self.action_space = ctx.action_space
        self.exp, n = exp, ctx.num_envs
        self.num_envs = n
        self.phase: np.ndarray = np.zeros(n, dtype=np.int64)
        self.count: np.ndarray = np.zeros(n, dtype=np.int64)
        self.retries = np.zeros(n, dtype=np.int64)
        self.anchor = np.zeros((n, 3))
        # The fingers' closing direction, once chosen (NaN: not yet).
        self.closing: np.ndarray = np.full(n, np.nan)
        self.prev_ee: np.ndarray = np.zeros((n, 3))
        self.hold = np.zeros((n, 3))  # object - grip site when grasped
        self.rot_ee = np.tile(np.eye(3), (n, 1, 1))  # the grip site's frame, this step

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None:
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids)
        for name, value in (("phase", APPROACH), ("count", 0), ("retries", 0), ("closing", np.nan)):
            getattr(self, name)[ids] = value

    def close(self) -> None:
        """Nothing to release."""

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        """(B, 1, 7) actions; only the envs `env_ids` (default: all) advance (the others'
        phase state is put back as it was)."""
        idle = np.setdiff1d(np.arange(self.num_envs), [] if env_ids is None else env_ids)
        if env_ids is None or not len(idle):
            return self._act(obs)
        before = {k: np.copy(getattr(self, k)) for k in self.state}
        action = self._act(obs)
        for k, v in before.items():
            getattr(self, k)[idle] = v[idle]
        return action

    def _act(self, obs: dict[str, Any]) -> np.ndarray:
        p, s = obs["policy"], obs["privileged"]
        ee = np.asarray(p["ee_pos"], dtype=np.float64)
        rot_ee = quat_to_mat(np.asarray(p["ee_quat"], dtype=np.float64))
        cur = np.arctan2(rot_ee[:, 1, 0], rot_ee[:, 0, 0])  # the fingers' closing direction
        self.closing = np.where(np.isnan(self.closing), cur, self.closing)
        moved = np.linalg.norm(ee - self.prev_ee, axis=1)
        self.prev_ee = ee.copy()
        nxt = self.phase.copy()
        self.rot_ee = rot_ee
        target, speed, grip = self._plan(ee, cur, moved, s, nxt)
        # an env sent back to its approach this step chooses its direction again from here
        self.closing = np.where(np.isnan(self.closing), cur, self.closing)
        self.count = np.where(nxt == self.phase, self.count + 1, 0)
        self.phase = nxt
        action = np.zeros((len(ee), 7))
        action[:, :3] = capped(POS_GAIN * (target - ee) / POS_SCALE, speed)
        err = mat_to_axis_angle(self._goal_rot() @ rot_ee.transpose(0, 2, 1))
        action[:, 3:6] = capped(ROT_GAIN * err / ROT_SCALE, 1.0)
        action[:, 6] = grip
        return action[:, None, :]

    def _plan(
        self, ee: np.ndarray, cur: np.ndarray, moved: np.ndarray, s: dict[str, Any],
        nxt: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
        """(target (B, 3), speed (B,) in input units, gripper command (B,)); sets `nxt`."""
        raise NotImplementedError

    def _goal_rot(self) -> np.ndarray:
        """(B, 3, 3) the grip-site frame to turn to: pointing down, the fingers closing
        along `closing` (a skill that holds something else overrides it)."""
        return down_frame(self.closing)

    def _enter(self, mask: np.ndarray, phase: int, nxt: np.ndarray, ee: np.ndarray) -> None:
        """Envs in `mask` move to `phase`, anchored at the grip-site position `ee` (B, 3)."""
        nxt[mask], self.anchor[mask] = phase, ee[mask]

    def _retry(self, mask: np.ndarray, nxt: np.ndarray) -> None:
        """Envs in `mask` start over from the approach while they have retries left."""
        again = mask & (self.retries < RETRIES)
        self.retries += again
        self._enter(again, APPROACH, nxt, self.anchor)
        self.closing[again] = np.nan
