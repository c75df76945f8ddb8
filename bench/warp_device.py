"""Physics steps/s of benchmark scenes on MuJoCo Warp at 1,024-4,096 worlds, prepared for a
lent GPU (bench/gpu.md, "MuJoCo Warp"), runnable on the CPU device too.

A device has no LIBERO or Meta-World assets (about 1.2 GB installed), so the scenes
travel as compiled models:

    # here: compiled models (.mjb, meshes inside), init states and the arm's names
    .venv/bin/python bench/warp_device.py export .cache/warp-device \\
        libero:libero_spatial/0 libero:libero_goal/3 metaworld:MT10/reach-v3
    # on the device (mujoco, mujoco-warp, warp-lang, numpy and this repository):
    python bench/warp_device.py run .cache/warp-device --worlds 1024 4096 --steps 20

`run` steps each scene's worlds from its recorded init states (repeated over the
worlds) as the warp backend does: per control step, `substeps` physics steps; for an
`osc_pose` arm (LIBERO) each physics step is step1, the OSC kernel holding the pose
(`metasim.control.osc_warp`), step2; on CUDA the control step is one captured graph. It
prints one JSON line per scene and world count: physics steps/s, compile seconds, and
control steps/s (state only: no images, no policy).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import mujoco
import numpy as np


def export(out: Path, refs: list[str], episodes: int) -> None:
    from metasim.control.action_kinds.osc_pose import osc_for
    from metasim.scene.compile import ROBOT_PREFIX
    from metasim.scene.sources import compile_task
    from metasim.sim import get_backend
    from metasim.sim.mujoco.handler import SPEC
    from metasim.tasks.task import TaskRuntime

    out.mkdir(parents=True, exist_ok=True)
    for ref in refs:
        compiled = compile_task(ref, "scene")
        m, robot = compiled.model, compiled.robot
        name = ref.replace(":", "_").replace("/", "_")
        mujoco.mj_saveModel(m, str(out / f"{name}.mjb"))
        native = get_backend("mujoco").launch(compiled, episodes)
        state = TaskRuntime(compiled).sample_initial(
            native.default_state(episodes), list(range(episodes))
        )
        native.set_state(state)
        rows = native._state.copy()  # mjSTATE_INTEGRATION rows of the init states
        native.close()
        meta: dict[str, Any] = {
            "ref": ref,
            "substeps": compiled.substeps,
            "spec": int(SPEC),
            "states": rows.tolist(),
        }
        if robot.control == "osc_pose":
            idx = osc_for(compiled, 1).index
            meta["osc"] = {
                "site": m.site(idx.site).name,
                "arm_joints": [ROBOT_PREFIX + j for j in robot.arm_joints],
                "gripper_actuators": [m.actuator(int(a)).name for a in idx.gripper_actuators],
            }
        (out / f"{name}.json").write_text(json.dumps(meta))
        print(f"exported {ref} -> {out / name}.mjb", file=sys.stderr)


def _control_step(wm: Any, wd: Any, substeps: int, device_osc: Any) -> None:
    import mujoco_warp as mjw

    for k in range(substeps):
        if device_osc is None:
            mjw.step(wm, wd)
        else:
            mjw.step1(wm, wd)
            device_osc.substep(k, wd)
            mjw.step2(wm, wd)


def _camera_rate(
    m: mujoco.MjModel, wm: Any, wd: Any, n: int, cams: list[str], size: int, steps: int
) -> dict[str, Any]:
    """Frames/s of the named cameras of every world at size x size, rendered as the warp
    rig renders them (kinematics, camlight, BVH refit, one ray-trace launch with
    OpenGL's shading order at the default samples per pixel)."""
    import mujoco_warp as mjw
    import warp as wp

    from metasim.scene.render_schema import RaytraceSpec
    from metasim.sim.warp.gl_shading import render_module

    names = [m.camera(i).name for i in range(m.ncam)]
    cams = [c for c in cams if c in names]
    if not cams:
        return {"cameras": f"none of the asked cameras in {names}"}
    spp = RaytraceSpec().samples_per_pixel
    rc = mjw.create_render_context(
        m, nworld=n, cam_res=[(size, size)] * len(cams), render_rgb=[True] * len(cams),
        render_depth=[False] * len(cams), cam_active=cams, use_shadows=True,
        samples_per_pixel=spp, render_skybox=True,
    )  # fmt: skip
    module = render_module()
    render = mjw.render if module is None else module.render

    def frame() -> None:
        mjw.kinematics(wm, wd)
        mjw.com_pos(wm, wd)
        mjw.camlight(wm, wd)
        mjw.refit_bvh(wm, wd, rc)
        render(wm, wd, rc)

    frame()  # compiles
    wp.synchronize_device()
    t = time.perf_counter()
    for _ in range(steps):
        frame()
    wp.synchronize_device()
    sec = (time.perf_counter() - t) / steps
    return {"cameras": cams, "size": size, "spp": spp, "render_s": round(sec, 5),
            "frames_per_s": round(n * len(cams) / sec, 1)}  # fmt: skip


def run(
    folder: Path,
    worlds: list[int],
    steps: int,
    device: str | None,
    cams: list[str] | None = None,
    size: int = 224,
    episode_steps: int = 300,
) -> None:
    import mujoco_warp as mjw
    import warp as wp

    from metasim.control.osc import OscIndex, OscPose, arm_at
    from metasim.sim.warp.handler import default_capacity

    wp.config.log_level = wp.LOG_WARNING
    wp.init()
    dev = device or ("cuda:0" if wp.get_cuda_device_count() else "cpu")
    for meta_path in sorted(folder.glob("*.json")):
        meta = json.loads(meta_path.read_text())
        m = mujoco.MjModel.from_binary_path(str(meta_path.with_suffix(".mjb")))
        states = np.asarray(meta["states"])
        data = mujoco.MjData(m)
        mujoco.mj_setState(m, data, states[0], meta["spec"])
        mujoco.mj_forward(m, data)
        capacity = default_capacity(m)  # as the warp backend sizes its Data
        for n in worlds:
            rows = states[np.arange(n) % len(states)]
            t0 = time.perf_counter()
            with wp.ScopedDevice(dev):
                wm = mjw.put_model(m)
                wd = mjw.put_data(
                    m,
                    data,
                    nworld=n,
                    nconmax=capacity[0],
                    njmax=capacity[1],
                )
                mjw.set_state(
                    wm,
                    wd,
                    wp.array(rows.astype(np.float32), dtype=float),
                    meta["spec"],
                    wp.array(np.ones(n, dtype=bool), dtype=bool),
                )
                device_osc = None
                if "osc" in meta:
                    o = meta["osc"]
                    index = OscIndex.from_model(
                        m, o["site"], o["arm_joints"], o["gripper_actuators"]
                    )
                    osc = OscPose(index, n)
                    # the arm of each recorded init state (qpos follows time in a row)
                    start = arm_at(m, index, states[:, 1 : 1 + m.nq])
                    pick = np.arange(n) % len(states)
                    osc.reset(
                        range(n),
                        type(start)(**{k: v[pick] for k, v in vars(start).items()}),
                        stale=False,
                    )
                    device_osc = osc.on_device("warp", m, wm, dev)
                    device_osc.upload()

                _control_step(wm, wd, meta["substeps"], device_osc)  # compiles
                graph = None
                if dev.startswith("cuda"):
                    with wp.ScopedCapture(device=dev, force_module_load=True) as capture:
                        _control_step(wm, wd, meta["substeps"], device_osc)
                    graph = capture.graph
                wp.synchronize_device(dev)
                compile_s = time.perf_counter() - t0
                t = time.perf_counter()
                for _ in range(steps):
                    if graph is not None:
                        wp.capture_launch(graph)
                    else:
                        _control_step(wm, wd, meta["substeps"], device_osc)
                wp.synchronize_device(dev)
                sec = (time.perf_counter() - t) / steps
                cam: dict[str, Any] = {}
                if cams:
                    cam = _camera_rate(m, wm, wd, n, cams, size, steps)
            if "render_s" in cam:  # env side: one control step + one observation
                step_s = sec + cam["render_s"]
                cam["episodes_per_hour"] = round(n * 3600 / (episode_steps * step_s), 1)
            print(
                json.dumps(
                    cam
                    | {
                        "scene": meta["ref"],
                        "device": dev,
                        "worlds": n,
                        "substeps": meta["substeps"],
                        "controller": "osc_pose (device)" if device_osc else "none",
                        "compile_s": round(compile_s, 2),
                        "control_steps_per_s": round(1.0 / sec, 2),
                        "physics_steps_per_s": round(n * meta["substeps"] / sec, 1),
                        "overflow": int(np.bitwise_or.reduce(wd.overflow.numpy())),
                    }
                ),
                flush=True,
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("export")
    ex.add_argument("out", type=Path)
    ex.add_argument("refs", nargs="+")
    ex.add_argument("--episodes", type=int, default=8)
    rn = sub.add_parser("run")
    rn.add_argument("folder", type=Path)
    rn.add_argument("--worlds", type=int, nargs="+", default=[1024, 4096])
    rn.add_argument("--steps", type=int, default=20)
    rn.add_argument("--device", default=None)
    rn.add_argument("--cameras", nargs="+", default=None, help="also ray-trace these cameras")
    rn.add_argument("--size", type=int, default=224, help="camera width and height")
    rn.add_argument("--episode-steps", type=int, default=300, help="for episodes/hour")
    args = parser.parse_args()
    if args.cmd == "export":
        export(args.out, args.refs, args.episodes)
    else:
        run(
            args.folder,
            args.worlds,
            args.steps,
            args.device,
            args.cameras,
            args.size,
            args.episode_steps,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
