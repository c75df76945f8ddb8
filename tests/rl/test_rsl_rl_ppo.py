"""RL on metasim end to end: rsl_rl's PPO trains on lift_cube's state through the Isaac
Lab contract (metasim.envs.isaaclab) until its return rises past a stated margin, on the
native backend and on warp (Warp's CPU device here); the trained actor, exported as
TorchScript, is then scored by `metasim eval policy=torch_module`. Bounded: about a
minute of training on two CPU cores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from metasim.envs.isaaclab import IsaacLabEnv, RslRlVecEnv
from metasim.envs.vec_env import MetasimVectorEnv

# Per backend: envs, episode length (control steps), PPO iterations, learning rate and
# epochs, and the return the trained policy must gain over the untrained one. Measured
# here: native (the task's 160-step episodes) 8.0 -> 33.3; warp on Warp's CPU device
# (~1.5 s a control step for 16 envs, so 24-step episodes) 0.71 -> 1.23 on native with
# the same budget.
BUDGET = {
    "mujoco": {"envs": 32, "length": 160, "iterations": 10, "lr": 1e-3, "epochs": 4, "gain": 8.0},
    "warp": {"envs": 16, "length": 24, "iterations": 4, "lr": 3e-3, "epochs": 8, "gain": 0.3},
}


def train_cfg(steps: int, lr: float, epochs: int) -> dict[str, Any]:
    mlp = {"class_name": "MLPModel", "hidden_dims": [64, 64], "activation": "elu"}
    return {
        "num_steps_per_env": steps,
        "save_interval": 1000,
        "obs_groups": {"actor": ["policy"], "critic": ["critic"]},
        "algorithm": {
            "class_name": "PPO",
            "learning_rate": lr,
            "num_learning_epochs": epochs,
            "num_mini_batches": 4,
            "entropy_coef": 0.005,
            "gamma": 0.98,
            "desired_kl": 0.01,
        },
        "actor": {
            **mlp,
            "obs_normalization": True,
            "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 0.6},
        },
        "critic": {**mlp, "obs_normalization": True},
        "multi_gpu": None,
    }


def mean_return(env: IsaacLabEnv, policy: Any) -> float:
    """The mean return of one episode per env, deterministic actions, fixed seeds."""
    import torch

    obs, _ = env.reset(seed=123)
    total = np.zeros(env.num_envs)
    for _ in range(env.max_episode_length):
        with torch.inference_mode():
            actions = policy(obs["policy"])
        obs, reward, *_ = env.step(actions)
        total += reward.numpy()
    return float(total.mean())


@pytest.mark.learned
@pytest.mark.parametrize("backend", ["mujoco", pytest.param("warp", marks=pytest.mark.slow)])
def test_ppo_return_rises_and_metasim_eval_scores_it(backend: str, tmp_path: Path) -> None:
    if backend == "warp":
        pytest.importorskip("mujoco_warp", reason="the warp extra is not installed")
    pytest.importorskip("rsl_rl", reason="the rl extra is not installed")
    import torch
    from rsl_rl.runners import OnPolicyRunner

    from metasim.cli.main import main

    b = BUDGET[backend]
    torch.manual_seed(0)
    metasim_env = MetasimVectorEnv("lift_cube", num_envs=int(b["envs"]), backend=backend, seed=0)
    env = IsaacLabEnv(metasim_env, max_episode_length=int(b["length"]))
    steps = min(32, env.max_episode_length)
    cfg = train_cfg(steps, b["lr"], int(b["epochs"]))
    try:
        runner = OnPolicyRunner(RslRlVecEnv(env), cfg, log_dir=None, device="cpu")
        actor = runner.alg.get_policy().as_jit()
        before = mean_return(env, actor)
        runner.learn(int(b["iterations"]))
        actor = runner.alg.get_policy().as_jit()
        after = mean_return(env, actor)
        print(f"{backend}: return {before:.2f} -> {after:.2f} ({b['iterations']} iterations)")
        assert after > before + b["gain"], (before, after)
        path = env.export_policy(actor, tmp_path / "policy.pt")
    finally:
        env.close()
    out = tmp_path / "run"
    argv = ["eval", "--quiet", "suite.tasks=[lift_cube]", "policy=torch_module"]
    argv += [f"policy.path={path}", f"backend={backend}", "episodes=2", "num_envs=2", f"out={out}"]
    assert main(argv) == 0
    (row,) = json.loads((out / "summary.json").read_text())["tasks"].values()
    assert row["n"] == 2 and row["errors"] == 0
    print(f"metasim eval: success {row['success_rate']:.2f}, progress {row['mean_progress']:.2f}")
