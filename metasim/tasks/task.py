"""A task at run time: initial-state sampling, success and progress, batched over envs."""

from __future__ import annotations

import numpy as np

from metasim.rotations import quat_mul, yaw_quat
from metasim.scene.compile import CompiledScene
from metasim.scene.predicate_base import PredicateBase
from metasim.scene.schema import DrawerSpec
from metasim.sim.base import SimState
from metasim.tasks.init_states import InitStates
from metasim.tasks.predicates import TaskView, compile_predicate
from metasim.tasks.seeds import episode_rng


class TaskRuntime:
    """Success predicate, progress subgoals and reset distribution of one compiled scene."""

    def __init__(self, compiled: CompiledScene) -> None:
        self.compiled = compiled
        task = compiled.scene.task
        self.instruction = task.instruction
        self.success_reads = task.success_reads
        self._success = compile_predicate(task.success, compiled)
        self._subgoals = [compile_predicate(p, compiled) for p in task.subgoals]
        self._obj = {ob.name: i for i, ob in enumerate(compiled.scene.objects)}
        spec = task.init_states
        self.init_states = None if spec is None else InitStates.of(spec, compiled)
        self.needs_contacts = any(
            _uses_contacts(p) for p in (task.success, *task.subgoals)
        )  # the predicates that test touching read TaskView.contacts

    def success(self, view: TaskView) -> np.ndarray:
        """(B,) bool."""
        return np.asarray(self._success(view), dtype=bool)

    def progress(self, view: TaskView, success: np.ndarray) -> np.ndarray:
        """(B,) in [0, 1]: the fraction of subgoals that hold now; 1 on success."""
        if not self._subgoals:
            return success.astype(np.float64)
        held = np.asarray(self._subgoals[0](view), dtype=np.float64)
        for g in self._subgoals[1:]:  # a mean without np.mean's per-call overhead
            held += g(view)
        held /= len(self._subgoals)
        return np.where(success, 1.0, held)

    def sample_initial(
        self, base: SimState, seeds: list[int], episodes: list[int] | None = None
    ) -> SimState:
        """Initial states for one env per seed: `base` (B = len(seeds)) with robot joint
        noise, object pose ranges and fixture openings drawn from each seed's generator.
        The draw depends only on the seed, never on the env slot it lands in. A task with
        recorded init states starts episode k from row k mod N instead (`episodes` gives
        each env's k; without it, k is taken from the seed), then adds the seed's robot
        joint noise and object offsets to that row (see `_perturb_recorded`)."""
        if self.init_states is not None:
            state = base.copy()
            ks = list(episodes) if episodes is not None else [int(s) for s in seeds]
            self.init_states.write(state, self.compiled.model.qpos0, ks)
            for row, seed in enumerate(seeds):
                self._perturb_recorded(state, row, episode_rng(seed, "initial_state"))
            return state
        c = self.compiled
        idx = c.index
        scene = c.scene
        state = base.copy()
        grip = c.robot.gripper
        for row, seed in enumerate(seeds):
            rng = episode_rng(seed, "initial_state")
            noise = scene.robot.init_noise
            arm = idx.home + rng.uniform(-noise, noise, size=idx.home.shape)
            arm = np.clip(arm, idx.arm_range[:, 0], idx.arm_range[:, 1])
            state.qpos[row, idx.arm_qpos] = arm
            if len(idx.arm_act):  # a mocap-driven robot's arm joints are passive
                state.ctrl[row, idx.arm_act] = arm
            if grip is not None:
                g = scene.robot.gripper_init
                ctrl = grip.closed_ctrl + g * (grip.open_ctrl - grip.closed_ctrl)
                state.ctrl[row, idx.gripper_act] = ctrl
                state.qpos[row, idx.gripper_qpos] = g * grip.max_width / len(idx.gripper_qpos)
            nominal = {ob.name: np.asarray(ob.pos) for ob in scene.objects}
            for group in scene.shuffle_positions:
                for name, k in zip(group, rng.permutation(len(group)), strict=True):
                    nominal[name] = np.asarray(scene.objects[self._obj[group[k]]].pos)
            for ob, adr in zip(scene.objects, idx.object_qpos, strict=True):
                if adr < 0:
                    continue
                r = ob.init
                pos = nominal[ob.name] + rng.uniform(r.pos_low, r.pos_high)
                yaw = rng.uniform(r.yaw_low, r.yaw_high)
                state.qpos[row, adr : adr + 3] = pos
                state.qpos[row, adr + 3 : adr + 7] = quat_mul(yaw_quat(yaw), np.asarray(ob.quat))
            for fx in scene.fixtures:
                if isinstance(fx, DrawerSpec):
                    frac = fx.init_open
                    if fx.init_open_range is not None:
                        frac = rng.uniform(*fx.init_open_range)
                    j = c.joint_ref(fx.name)
                    state.qpos[row, idx.joint_qpos[j]] = frac * fx.travel
        state.qvel[:] = 0.0
        state.qacc_warmstart[:] = 0.0
        state.time[:] = 0.0
        return state

    def _perturb_recorded(self, state: SimState, row: int, rng: np.random.Generator) -> None:
        """On a recorded init state (env `row`): add uniform noise of ±`robot.init_noise`
        rad to the arm joints (clipped to their ranges), and to every free object its
        `init` offset: x, y and yaw drawn from the ranges, z raised only (never lowered
        into its support). Zero ranges leave the row exactly as recorded."""
        c = self.compiled
        idx = c.index
        noise = c.scene.robot.init_noise
        if noise > 0:
            arm = state.qpos[row, idx.arm_qpos] + rng.uniform(-noise, noise, idx.arm_qpos.shape)
            state.qpos[row, idx.arm_qpos] = np.clip(arm, idx.arm_range[:, 0], idx.arm_range[:, 1])
        for ob, adr in zip(c.scene.objects, idx.object_qpos, strict=True):
            r = ob.init
            if adr < 0 or (r.pos_low == r.pos_high == (0.0,) * 3 and r.yaw_low == r.yaw_high == 0):
                continue
            off = rng.uniform(r.pos_low, r.pos_high)
            state.qpos[row, adr : adr + 2] += off[:2]
            state.qpos[row, adr + 2] += max(float(off[2]), 0.0)
            quat = state.qpos[row, adr + 3 : adr + 7]
            state.qpos[row, adr + 3 : adr + 7] = quat_mul(
                yaw_quat(rng.uniform(r.yaw_low, r.yaw_high)), quat
            )


def _uses_contacts(node: PredicateBase) -> bool:
    """Whether a predicate tree holds a kind that tests touching (reads contacts)."""
    return node.uses_contacts() or any(_uses_contacts(c) for _, c in node.children())
