"""Physics steps/s of benchmark tasks on the warp backend at 1,024-4,096 worlds, prepared
for a lent GPU (bench/gpu.md, "MuJoCo Warp"), runnable on the CPU device too.

A device has no LIBERO or Meta-World package, so the tasks travel prebuilt (`metasim
scene prebuild ... --no-textures`, read through `prebuilt:`):

    # here
    .venv/bin/metasim scene prebuild libero:libero_object/2 --suite libero \\
        --out .cache/prebuilt-device/libero-object --no-textures
    # on the device (mujoco, mujoco-warp, warp-lang and metasim's core dependencies)
    python bench/warp_device.py .cache/prebuilt-device/* --worlds 1024 4096 --steps 20

Each task's worlds start from its recorded init states and are stepped by the warp
backend's own handler (`metasim bench physics`'s raw handler loop: per control step the
substeps on the device, LIBERO's osc_pose holding the pose as a kernel between step1 and
step2, Meta-World's weld rows rewritten there, one captured CUDA graph per control step,
and the one copy to the host an episode pays). One JSON line per task and world count:
physics and control steps/s and the launch-and-compile seconds. Unlike `bench physics`
it runs no native backend beside it (which at 4,096 LIBERO envs would not fit in memory).

With `--cameras`, each line also has the warp rig's frames/s for those cameras (MuJoCo
Warp's ray tracer, `render=warp`: every camera of every world in one launch, at the
scene's default ray-tracing settings) and the env side's episodes/hour with them
(`--episode-steps` control steps an episode, physics plus images, no policy).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def camera_rate(compiled: Any, n: int, cams: list[str], size: int, steps: int) -> dict[str, Any]:
    """Frames/s of the warp rig rendering `cams` (those the scene has) of `n` worlds."""
    from metasim.sim import get_backend
    from metasim.sim.cameras import View

    m = compiled.model
    names = [m.camera(i).name for i in range(m.ncam)]
    views = [View(c, size, size) for c in cams if c in names]
    if not views:
        return {"cameras": f"none of {cams} in {names}"}
    handler = get_backend("warp").launch(compiled, n)
    try:
        rig = handler.camera_rig(views, "warp")
        rig.render()  # compiles
        t = time.perf_counter()
        for _ in range(steps):
            rig.render()
        sec = (time.perf_counter() - t) / steps
    finally:
        handler.close()
    return {
        "cameras": [v.camera for v in views],
        "size": size,
        "render_s": round(sec, 5),
        "frames_per_s": round(n * len(views) / sec, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+", help="folders of `metasim scene prebuild`")
    parser.add_argument("--worlds", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cameras", nargs="+", default=None, help="also ray-trace these")
    parser.add_argument("--size", type=int, default=224, help="camera width and height")
    parser.add_argument("--episode-steps", type=int, default=300, help="for episodes/hour")
    args = parser.parse_args()
    tasks = sorted(p for f in args.folders for p in f.glob("*.prebuilt.json"))
    if not tasks:
        parser.error("no prebuilt task in the folders (metasim scene prebuild --out FOLDER)")

    from metasim.bench.physics import handler_rate
    from metasim.scene.sources import compile_task
    from metasim.sim import get_backend
    from metasim.sim.warp.support import pick_device

    get_backend("warp")  # sets Warp's log level before it initializes (clean JSON lines)
    device = pick_device(None)
    for path in tasks:
        compiled = compile_task(f"prebuilt:{path}")
        for n in args.worlds:
            rate: dict[str, Any] = handler_rate(compiled, "warp", n, args.steps, None, args.repeats)
            line = {"scene": compiled.scene.name, "device": device, "worlds": n}
            if args.cameras:
                cams = camera_rate(compiled, n, args.cameras, args.size, args.steps)
                rate["cameras"] = cams
                if "render_s" in cams:
                    step_s = 1.0 / rate["control_steps_per_s"] + cams["render_s"]
                    rate["episodes_per_hour_with_cameras"] = round(
                        3600 * n / (args.episode_steps * step_s)
                    )
            print(json.dumps({**line, "substeps": compiled.substeps, **rate}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
