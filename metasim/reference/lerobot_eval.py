"""LeRobot's own evaluation, `lerobot-eval`, run unmodified in a benchmark's reference venv.

The other harness of "one checkpoint, two harnesses": the checkpoint that
`metasim eval policy=lerobot_metaworld` scores is scored by LeRobot 0.4.4's
`lerobot.scripts.lerobot_eval.main` too, on the benchmark package itself (Meta-World 3.1.1
on MuJoCo 3.3.0 in .cache/metaworld-ref; LIBERO on robosuite 1.4 / MuJoCo 3.17 in
.cache/libero-ref), with LeRobot and torch from the peer layer (metasim.reference.peerlayer)
at the end of `sys.path`. Nothing is patched: the command line is LeRobot's
(`--policy.path`, `--env.type`, `--env.task`, `--eval.n_episodes`, ...), and its
`eval_info.json` is read back.

    python -m metasim.reference.lerobot_eval --benchmark metaworld --out DIR -- \\
        --policy.path=CKPT --env.type=metaworld --env.task=drawer-close-v3 \\
        --eval.n_episodes=50 --eval.batch_size=10 --policy.device=cpu
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from metasim.errors import MetasimInputError, one_line

# The reference interpreter appends the layer to its path, then runs LeRobot's main.
BOOT = (
    "import sys; sys.path.append(sys.argv.pop(1)); sys.argv[0] = 'lerobot-eval'; "
    "from lerobot.scripts.lerobot_eval import main; main()"
)
INFO = "eval_info.json"


def reference_python(name: str) -> Path:
    """The reference venv's python of benchmark `name` (built first if needed)."""
    from metasim.reference.benchmark import benchmark

    entry = benchmark(name)
    if entry.venv is None:
        raise MetasimInputError("--benchmark", [f"benchmark {name!r} has no reference venv"])
    module, _, fn = entry.venv.partition(":")
    return Path(getattr(importlib.import_module(module), fn)())


def run(python: Path, args: list[str], out: Path, timeout_s: float | None = None) -> dict[str, Any]:
    """Run `lerobot-eval ARGS --output_dir=OUT` with `python`; its eval_info.json."""
    from metasim.reference.peerlayer import ensure_layer

    layer = ensure_layer()
    if any(a.startswith("--output_dir") for a in args):
        raise MetasimInputError("lerobot-eval arguments", ["--output_dir: given by --out"])
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", WANDB_MODE="disabled")
    env.setdefault("MUJOCO_GL", "egl")
    cmd = [str(python), "-c", BOOT, str(layer), *args, f"--output_dir={out}"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
    (out.parent / f"{out.name}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not (out / INFO).is_file():
        tail = one_line((proc.stderr or proc.stdout)[-1200:])
        raise RuntimeError(f"lerobot-eval failed (exit {proc.returncode}): {tail}")
    info: dict[str, Any] = json.loads((out / INFO).read_text())
    return info


def per_task(info: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Task -> (successes, episodes) of an eval_info.json (`per_task` entries)."""
    out: dict[str, tuple[int, int]] = {}
    for entry in info.get("per_task", []):
        wins = [bool(s) for s in entry["metrics"]["successes"]]
        k, n = out.get(str(entry["task_group"]), (0, 0))
        out[str(entry["task_group"])] = (k + sum(wins), n + len(wins))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m metasim.reference.lerobot_eval")
    p.add_argument("--benchmark", required=True, help="whose reference venv (metaworld, libero)")
    p.add_argument("--out", required=True, type=Path, help="lerobot-eval's --output_dir")
    p.add_argument("--timeout-s", type=float, default=None)
    p.add_argument("args", nargs=argparse.REMAINDER, help="-- then lerobot-eval's arguments")
    ns = p.parse_args(argv)
    args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
    try:
        info = run(reference_python(ns.benchmark), args, ns.out, ns.timeout_s)
    except MetasimInputError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    for task, (k, n) in sorted(per_task(info).items()):
        print(f"{task}: {k}/{n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
