"""The Meta-World reference: PyPI `metaworld==3.1.1` on its pinned MuJoCo 3.3.0 in its own
virtualenv (.cache/metaworld-ref, built on first use from PyPI), driven over a pipe.

metasim pins MuJoCo 4; installing metaworld into metasim's venv would downgrade it, so the
package lives in its own venv and runs in a subprocess (`worker.py`, JSON lines, arrays as
base64, never pickle), as LIBERO's reference does.

    with MetaWorldRef() as ref:
        names = ref.tasks("MT50")                          # the 50 env names, in order
        vecs = ref.variations("MT50", "reach-v3")          # (50, d) rand_vec per variation
        ep = ref.expert("MT50", "reach-v3", variation=3)   # the package's scripted policy
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from metasim.paths import project_cache
from metasim.reference.spec import TABLES, Reference, ReferenceSpec

VENV = project_cache("metaworld-ref")
# metaworld 3.1.1 pins mujoco==3.3.0 and needs gymnasium>=1.1; gymnasium's MuJoCo envs
# import `packaging` without declaring it (gymnasium 1.4.0), so it is named here.
REQUIREMENTS = ["metaworld==3.1.1", "mujoco==3.3.0", "gymnasium>=1.1", "packaging"]


class MetaWorldRefError(RuntimeError):
    """The Meta-World reference could not be built, started, or answered with an error."""


SPEC = ReferenceSpec(
    requirements=tuple(REQUIREMENTS),
    probe="import metaworld, metaworld.policies, mujoco; print(mujoco.__version__)",
    what="metaworld",
    error=MetaWorldRefError,
    name="Meta-World",
    venv=VENV,
    worker=Path(__file__).with_name("worker.py"),
    modules=(Path(__file__).with_name("envstate.py"), TABLES),
)
venv_ok, build_venv, ensure_venv = SPEC.venv_ok, SPEC.build_venv, SPEC.ensure_venv


class MetaWorldRef(Reference):
    """One worker process of the reference venv. Not thread-safe; one request at a time."""

    spec = SPEC

    # -- commands -------------------------------------------------------------------------
    def versions(self) -> dict[str, str]:
        """metaworld, mujoco, gymnasium and numpy versions inside the reference venv."""
        return {k: str(v) for k, v in self.call("versions").items()}

    def tasks(self, benchmark: str = "MT50", split: str = "train", seed: int = 0) -> list[str]:
        """The env names of a benchmark split (e.g. "reach-v3"), in the benchmark's order."""
        return [str(t) for t in self.ask("tasks", locals())["tasks"]]

    def variations(
        self, benchmark: str, task: str, split: str = "train", seed: int = 0
    ) -> np.ndarray:
        """The task's variations in the benchmark: rand_vec (K, d), K = 50; d and its
        meaning (object and goal positions) depend on the task."""
        return np.asarray(self.ask("variations", locals())["rand_vec"])

    def facts(self, task: str) -> dict[str, Any]:
        """A live env's facts (see the worker's `facts`): xml (path inside the package),
        timestep, frame_skip, action_scale, mocap_low/high (3,), max_path_length, sizes,
        cameras, actuators, hand (3,), rand_vec, render size."""
        return self.ask("facts", locals())

    def expert(
        self,
        benchmark: str,
        task: str,
        variation: int,
        *,
        split: str = "train",
        seed: int = 0,
        env_seed: int = 0,
        max_steps: int | None = None,
        until_success: bool = False,
    ) -> dict[str, Any]:
        """One episode of the package's scripted policy in its own gymnasium loop (see the
        worker's `expert`; `until_success` ends it at the first success): success, steps
        (first success, 0 if none), ran, seconds, max_path_length, hand (3,) tool-centre
        position at the end."""
        return self.ask("expert", locals())

    def init_states(
        self,
        task: str,
        benchmark: str = "MT50",
        split: str = "train",
        seed: int = 0,
        variations: list[int] | None = None,
        reuse: bool = True,
    ) -> dict[str, Any]:
        """The reset state of variations k (default [0]) of `task`: per k, the k-th of the
        split's Tasks for that env name set (the order `expert` uses) and `reset()` as the
        package's loop calls it, in one env (`reuse`, as the package's benchmark loops
        reuse one) or a new env per k. K = len(variations). Returns:

        - joints: [[name, type (mjtJoint: 0 free, 2 slide, 3 hinge), nq, nv], ...] in
          model order; qpos (K, nq), qvel (K, nv) are those joints' values concatenated.
        - mocap_pos (K, nmocap, 3), mocap_quat (K, nmocap, 4) (w x y z, as the env left it).
        - model: {field: {"names": [n], "rows": (n,), "values": (K, n, ...), "fresh":
          (n, ...)}}: every numeric MjModel array (body_pos, site_pos, geom_size, eq_data,
          ...) whose row differs, in any of the K variations, from the same task XML freshly
          compiled by the reference's MuJoCo; rows named by element ("#<row>" for an
          unnamed element or a field not per named element, e.g. the weld's eq_data).
          Construction's writes count too (the env rewrites the weld's eq_data).
        - attrs: {name: (K, ...)}: the env's numeric attributes reset wrote (e.g.
          _target_pos, obj_init_pos, init_tcp, objHeight), where every variation has them.
        - target_pos (K, 3) (`_target_pos`), obs (K, 39) (what reset returned),
          tcp_center (K, 3), hand (K, 3) (the `hand` body), rand_vec (K, d), seconds (K,)
          (construction + set_task + reset per variation), variations [k...],
          max_path_length.
        """
        variations = list(variations) if variations is not None else None
        return self.ask("init_states", locals())

    def expert_actions(self, task: str, obs: np.ndarray) -> np.ndarray:
        """The package's own scripted policy for `task` (`ENV_POLICY_MAP[task]()`, the one
        `expert` runs, one instance kept per task) on observations (B, 39): actions (B, 4)."""
        obs = np.asarray(obs, dtype=np.float64).reshape(-1, 39)
        return np.asarray(self.ask("expert_actions", locals())["actions"])

    def rollout(
        self,
        task: str,
        actions: np.ndarray,
        *,
        benchmark: str = "MT50",
        split: str = "train",
        seed: int = 0,
        variation: int = 0,
        camera: str | None = None,
        size: tuple[int, int] = (480, 480),
    ) -> dict[str, Any]:
        """Reset variation `variation` as `init_states` does, then env.step each action
        (T, 4), T <= max_path_length. Returns, row 0 being the reset state and row t the
        state after step t: tcp_center (T+1, 3), hand (T+1, 3), object_pos (T+1, F, 3)
        (the free joints' positions, names in free_joints [F]), qpos (T+1, nq), qvel
        (T+1, nv), obs (T+1, 39) (what reset and step returned). Per step: success (T,)
        (info["success"]); contact (T,): any contact, after the step, between a geom of a
        body of the Sawyer's xyz_base.xml and any other geom; contacts: T lists of
        [robot body, robot geom, other body, other geom] ("" for an unnamed geom). With
        `camera` the env is built with render_mode="rgb_array", camera_name=camera,
        width, height = size, and frame (H, W, 3) uint8 is env.render() right after
        reset, as the package returns it."""
        acts = np.asarray(actions, dtype=np.float64).reshape(-1, 4)
        return self.call(
            "rollout",
            task=task,
            actions=acts,
            benchmark=benchmark,
            split=split,
            seed=seed,
            variation=variation,
            camera=camera,
            width=int(size[0]),
            height=int(size[1]),
        )

    def evaluate(
        self,
        task: str,
        states: dict[str, np.ndarray],
        *,
        benchmark: str = "MT50",
        split: str = "train",
        seed: int = 0,
        variation: int = 0,
    ) -> dict[str, np.ndarray]:
        """The package's own `evaluate_state` on B given states. The env of `variation` is
        reset once (the attributes its success reads: obj_init_pos, init_tcp, ...), then
        per row: qpos (B, nq) and qvel (B, nv; zeros when absent) set with `set_state`
        (mj_forward), mocap_pos (B, nmocap, 3), mocap_quat (B, nmocap, 4) and target_pos
        (B, 3) (`_target_pos`) when given, the goal sites re-placed as `step` does, the
        observation built with no previous frame (obs[18:36] = obs[:18], as after reset)
        and clipped to the observation space as `step` clips it, and
        evaluate_state(obs, zeros(4)): the zero action only enters the reward terms
        (gripper effort), not success. Returns success (B,) and every other info key (B,),
        reward (B,) and obs (B, 39), all float64."""
        states = {k: np.asarray(v, dtype=np.float64) for k, v in states.items()}
        if "qpos" not in states:
            raise ValueError("evaluate needs states['qpos'] (B, nq)")
        return dict(self.ask("evaluate", locals()))

    def bench_steps(
        self, task: str, steps: int, *, benchmark: str = "MT1", variation: int = 0, seed: int = 0
    ) -> float:
        """Seconds the package's own loop takes for `steps` env.step calls with uniform random
        actions (reset at truncation, counted), timed inside the worker (no pipe cost)."""
        return float(self.ask("bench_steps", locals())["seconds"])
