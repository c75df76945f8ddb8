"""Envs are bounded by a memory estimate from the compiled model (issue #33 item 4):
eval, collect, `bench physics` and `gym.make_vec` refuse a `num_envs` whose estimate is
over the memory available (exit 2 with the estimate) instead of dying in MuJoCo or being
killed by the OS. METASIM_ENV_MEMORY_BYTES sets the budget here, so the refusals do not
depend on this machine's free memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import mujoco
import pytest

import metasim.envs  # noqa: F401  (registers the gym ids)
from metasim.cli.main import main
from metasim.errors import MetasimInputError
from metasim.scene.sources import compile_task
from metasim.sim.memory import (
    ENV,
    check_env_memory,
    env_memory_bytes,
    mem_available,
    per_env_bytes,
    thread_bytes,
)

MW = "metaworld:reach-v3"


# Measured in a fresh process: in the test session's own, freed memory from earlier tests
# is reused and the growth reads smaller than what a run allocates.
_GROWTH = """
import json, sys
import numpy as np
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.scene.sources import compile_task
from metasim.sim.memory import per_env_bytes

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

compiled = compile_task(sys.argv[1])
n = int(sys.argv[2])
before = rss()
env = MetasimVectorEnv(compiled, num_envs=n, nthread=1)
env.reset(seed=0)  # every env's recorded initial state edits the model per env
for _ in range(3):
    env.step(np.zeros((n, env.single_action_space.shape[0])))
print(json.dumps({"grown": rss() - before, "estimate": per_env_bytes(compiled.model)}))
"""


def _grown(ref: str, n: int) -> tuple[int, int]:
    proc = subprocess.run(
        [sys.executable, "-c", _GROWTH, ref, str(n)], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    return out["grown"], out["estimate"]


@pytest.mark.reference
def test_the_estimate_covers_what_an_env_holds() -> None:
    """What an added env grows a process by (its MjData, its rows of the buffers; no
    model copy: per-env edits share the model) is within the estimate, and the estimate
    no longer counts a model copy (Meta-World's 18.6 MB model, 17.7 MB/env in the
    issue's run with a copy per env)."""
    one, estimate = _grown(MW, 1)
    many, _ = _grown(MW, 33)
    assert (many - one) / 32 <= estimate < 0.2 * mujoco.mj_sizeModel(compile_task(MW).model)


@pytest.mark.reference
def test_the_threads_models_count_once_per_thread() -> None:
    """A twin without textures per physics thread but the first (and its compile)."""
    model = compile_task(MW).model
    twin = mujoco.mj_sizeModel(model) - model.tex_data.nbytes
    assert thread_bytes(model, 64, threads=1) == 0
    assert thread_bytes(model, 64, threads=4) == (3 + 2) * twin
    assert thread_bytes(model, 2, threads=4) == (1 + 2) * twin  # no more threads than envs
    per = per_env_bytes(model)
    assert env_memory_bytes(model, 64, threads=4) == 64 * per + 5 * twin


def test_the_available_memory_is_read_from_meminfo(tmp_path: Path) -> None:
    info = tmp_path / "meminfo"
    info.write_text("MemTotal:       16000000 kB\nMemAvailable:    2000000 kB\n")
    assert mem_available(info) == 2_000_000 * 1024
    info.write_text("MemTotal: 1 kB\n")
    assert mem_available(info) is None
    assert mem_available(tmp_path / "absent") is None


@pytest.mark.reference
def test_the_budget_bounds_num_envs_and_its_variable_raises_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = compile_task(MW).model
    per = per_env_bytes(model)
    monkeypatch.setenv(ENV, str(10 * per))
    assert check_env_memory(model, 10, "num_envs=10", threads=1) == 10 * per
    with pytest.raises(MetasimInputError) as info:
        check_env_memory(model, 11, "num_envs=11", MW, threads=1)
    text = str(info.value)
    assert text.startswith(f"error: num_envs=11: 11 envs of {MW} need about ")
    assert "Ask for at most 10 envs" in text and ENV in text


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert "need about" in err and "MiB each, estimated from the compiled model" in err
    return err


@pytest.fixture
def budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """100 MB for envs: 64 Meta-World envs (~180 MB; ~1.2 GB with a model copy each) do
    not fit."""
    monkeypatch.setenv(ENV, str(100_000_000))


@pytest.mark.reference
def test_bench_physics_refuses_before_it_starts(capsys, budget) -> None:
    argv = ["bench", "physics", "--scene", MW, "--num-envs", "1", "64", "--steps", "2"]
    assert "error: --num-envs 64: 64 envs of metaworld:reach-v3" in _refused(capsys, argv)


@pytest.mark.reference
@pytest.mark.parametrize("verb", ["eval", "collect"])
def test_eval_and_collect_refuse_before_the_folder(
    capsys, budget, tmp_path: Path, verb: str
) -> None:
    out = tmp_path / "out"
    argv = [verb, "--quiet", "policy=metaworld_expert", f"suite.tasks=[{MW}]"]
    err = _refused(capsys, [*argv, "num_envs=64", "episodes=64", f"out={out}"])
    assert "error: num_envs=64: 64 envs of" in err
    assert not out.exists()


def test_gym_make_vec_refuses_before_it_allocates() -> None:
    """With no budget set, the machine's available memory: a billion envs never fit (the
    factory had no bound: killed by the OS)."""
    with pytest.raises(MetasimInputError, match="num_envs=1000000000: 1000000000 envs need"):
        gym.make_vec(
            "metasim/lift_cube-v0", num_envs=10**9, vectorization_mode="vector_entry_point"
        )


def test_camera_images_count_per_env() -> None:
    """Issue 47 finding 9: each frame FRAME_COPIES times; the ray tracer's n x n
    sub-pixels (4 bytes each) and its resolved frame besides."""
    from metasim.sim.memory import FRAME_COPIES, image_bytes

    rgb, depth = (224, 224, False), (224, 224, True)
    assert image_bytes([rgb, depth]) == FRAME_COPIES * 224 * 224 * (3 + 4)
    assert image_bytes([rgb], samples=4) == FRAME_COPIES * 224 * 224 * 3 + 16 * 224 * 224 * 4 + (
        224 * 224 * 3
    )
    assert image_bytes([]) == 0


def _images(side: int) -> list[str]:
    return [
        "policy=openpi",
        "~policy.observation.images",
        f"+policy.observation.images={{img: {{camera: front, render: [{side},{side}]}}}}",
        "suite.tasks=[lift_cube]",
    ]


@pytest.mark.parametrize("backend", ["mujoco", "warp"])
def test_eval_refuses_images_that_do_not_fit_before_the_folder(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    backend: str,
) -> None:
    """4096 envs of a 4096² camera with 4 x 4 sub-pixels (render=warp) were not refused:
    the run wrote its folder and made no progress; on the native backend 64 envs of it
    died allocating the observation space (a traceback). Refused up front, exit 2, with
    the images' share of the estimate, on either physics backend; a small camera fits."""
    monkeypatch.setenv(ENV, str(4 << 30))
    out = tmp_path / "out"
    n = "num_envs=4096" if backend == "warp" else "num_envs=64"
    argv = ["eval", "--quiet", *_images(4096), n, "episodes=4096", f"out={out}"]
    if backend == "warp":
        argv += ["backend=warp", "render=warp", "render_spp=4"]
    err = _refused(capsys, argv)
    assert f"error: {n}: " in err and "the cameras' images (" in err, err
    assert not out.exists()

    from metasim.evaluate.config import compose
    from metasim.evaluate.policy_io import image_bytes_per_env
    from metasim.evaluate.rollout import check_fit

    cfg = compose(_images(224))
    compiled = compile_task("lift_cube")
    _, views = check_fit(compiled, cfg.rollout)
    images = image_bytes_per_env(compiled, views, "warp", 2)
    assert images == 5 * 224 * 224 * 3 + 4 * 224 * 224 * 4 + 224 * 224 * 3
    assert check_env_memory(compiled.model, 16, "num_envs=16", images=images) > 16 * images
