"""LeRobot's own env code inside the benchmarks' reference venvs: a package layer.

The peer-code convention tests run LeRobot 0.4.4's `LiberoEnv` and
`MetaworldEnv` with its `preprocess_observation` and env processors, in the reference venvs
(.cache/libero-ref: robosuite 1.4 on MuJoCo 3.17; .cache/metaworld-ref: metaworld 3.1.1 on
MuJoCo 3.3.0). Those venvs have neither torch nor lerobot, and they stay as they are (their
stamps, and the parity tests that use them, unchanged): one folder of packages,
`.cache/lerobot-peer`, installed with `pip install --target` from the package index, is put
at the END of a peer worker's `sys.path` (`PEER_PATH` in its environment; the worker
appends it). So every package a reference venv has (numpy, mujoco, gymnasium, robosuite,
metaworld) is the venv's own; the layer only adds what is missing.

What it holds (both reference venvs run CPython 3.11, as metasim's venv, so one layer
serves both): torch 2.14.1 + torchvision 0.29.1, metasim's [torch] pair (PyPI's CUDA build,
run on the CPU; the only torchvision whose compiled ops load with it, and LeRobot's
processor package imports torchvision), with their own dependencies; lerobot 0.4.4
with --no-deps plus exactly the modules `lerobot.envs.{libero,metaworld,utils,factory}`,
`lerobot.processor` and `lerobot.scripts.lerobot_eval` import (found by importing them in
both venvs). Measured here:
63-80 s from the machine's local wheel index (two builds), 5.0 GB (4.4 GB of it torch and
its nvidia libraries), once; triton (GPU kernel compiler only) is removed afterwards, as
scripts/setup.sh removes it from metasim's venv (it breaks Mesa's llvmpipe).
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from metasim.errors import one_line
from metasim.paths import project_cache

LAYER = project_cache("lerobot-peer")
STAMP = "metasim-peer-requirements.json"
# With their dependencies (pip resolves them inside the layer).
TORCH = ["torch==2.14.1", "torchvision==0.29.1"]
# --no-deps: lerobot pins torch<2.11 and needs training tools its env code never imports.
LEROBOT = [
    "lerobot==0.4.4",
    "accelerate==1.15.0",
    "av==15.1.0",
    "certifi==2026.10.19.post1",
    "charset-normalizer==3.5.3",
    "datasets==4.8.5",
    "deepdiff==8.6.2",
    "diffusers==0.35.2",
    "dill==0.4.1",
    "draccus==0.10.0",
    "einops==0.8.2",
    "filelock==4.3.1",
    "httpx==0.28.1",
    "huggingface-hub==0.35.3",
    "idna==3.20",
    "imageio==2.38.1",
    "mergedeep==1.3.4",
    "multiprocess==0.70.19",
    "mypy-extensions==1.2.0",
    "orderly-set==5.5.0",
    "pandas==3.1.1",
    "pyarrow==26.0.1",
    "pyserial==3.5",
    "python-dateutil==4.0.0",
    "pyyaml==6.0.4",
    "pyyaml-include==1.4.1",
    "requests==2.34.2",
    "safetensors==0.8.0",
    "termcolor==3.3.0",  # lerobot-eval's (metasim.reference.lerobot_eval)
    "toml==0.10.2",
    "tqdm==4.70.1",
    "typing-inspect==0.9.0",
    "urllib3==2.8.0",
    "xxhash==4.1.0",
]
REMOVE = ("triton",)  # breaks Mesa's llvmpipe (scripts/setup.sh); GPU kernels only


class PeerLayerError(RuntimeError):
    """The LeRobot peer layer could not be built (e.g. no package index reachable)."""


def _requirements() -> dict[str, list[str]]:
    return {"torch": TORCH, "no_deps": LEROBOT, "python": [sys.version.split()[0][:4]]}


def layer_ok(layer: Path = LAYER) -> bool:
    """True when the layer was built, completely, from this module's requirements."""
    stamp = layer / STAMP
    try:
        return bool(json.loads(stamp.read_text()) == _requirements())
    except (OSError, ValueError):
        return False


def _pip(python: str, layer: Path, args: list[str]) -> None:
    cmd = [python, "-m", "pip", "install", "-q", "--target", str(layer), "--upgrade", *args]
    subprocess.run(cmd, check=True, timeout=1800, capture_output=True, text=True)


def build_layer(layer: Path = LAYER, python: str | None = None) -> float:
    """(Re)build the layer with `python`'s pip (metasim's interpreter by default: the same
    CPython as the reference venvs); returns the seconds it took."""
    start = time.perf_counter()
    shutil.rmtree(layer, ignore_errors=True)
    py = python or sys.executable
    try:
        _pip(py, layer, TORCH)
        _pip(py, layer, ["--no-deps", *LEROBOT])
        for name in REMOVE:
            shutil.rmtree(layer / name, ignore_errors=True)
            for info in layer.glob(f"{name}-*.dist-info"):
                shutil.rmtree(info, ignore_errors=True)
        (layer / STAMP).write_text(json.dumps(_requirements()))
    except (subprocess.SubprocessError, OSError) as exc:
        shutil.rmtree(layer, ignore_errors=True)
        detail = one_line((getattr(exc, "stderr", None) or "")[-1500:])
        message = f"cannot build the LeRobot peer layer {layer}: {exc} {detail}"
        raise PeerLayerError(message) from exc
    return time.perf_counter() - start


def ensure_layer(layer: Path = LAYER) -> Path:
    """The layer's folder, building it first if needed (one builder at a time)."""
    layer.parent.mkdir(parents=True, exist_ok=True)
    with open(layer.parent / f"{layer.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not layer_ok(layer):
            build_layer(layer)
    return layer
