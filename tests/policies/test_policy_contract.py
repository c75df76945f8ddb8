"""Contract over every registered policy kind: the options model refuses unknown keys,
and the kind drives the evaluation loop to one well-formed record per episode asked.

Offline kinds run directly (scripted; python with an in-process object; lerobot with a
random ACT checkpoint); network kinds run against the test servers (openpi: metasim's
own policy server with the scripted expert; http: an OpenVLA-style server). A kind that
registers without a case here fails `test_every_registered_kind_has_a_case`."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from metasim.envs.vec_env import episode_seed
from metasim.errors import MetasimInputError
from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.policies.base import PolicyOptions, policy_kind, registered_policies
from metasim.policies.serving import session_factory
from metasim.policies.transport.http_json import HttpActServer
from metasim.policies.transport.server import PolicyServer

Case = Callable[[ExitStack, Path], dict[str, Any]]  # -> the kind's options


def _scripted(stack: ExitStack, tmp: Path) -> dict[str, Any]:
    return {}


def _python(stack: ExitStack, tmp: Path) -> dict[str, Any]:
    return {
        "target": "metasim.policies.serving:MetasimSession",
        "args": {"kind": "scripted"},
        "observation": {"raw": True},
    }


def _openpi(stack: ExitStack, tmp: Path) -> dict[str, Any]:
    server = stack.enter_context(PolicyServer(session_factory("scripted", PolicyOptions())))
    return {"port": server.port, "observation": {"raw": True}, "timeout_s": 30}


def _http(stack: ExitStack, tmp: Path) -> dict[str, Any]:
    def lift(payload: dict[str, Any]) -> np.ndarray:  # lifts the hand 1 cm a step
        return np.array([0.0, 0.0, 0.01, 0.0, 0.0, 0.0, 1.0], dtype=np.float32)

    server = stack.enter_context(HttpActServer(lift))
    return {
        "url": server.url,
        "observation": {"images": {"image": {"camera": "front", "size": [64, 64]}}},
        "actions": {"space": "ee_delta", "rotation": "euler_xyz", "gripper": "open1"},
    }


def _lerobot(stack: ExitStack, tmp: Path) -> dict[str, Any]:
    pytest.importorskip("lerobot")
    from metasim.policies.lerobot_testing import build_random_act_checkpoint

    ckpt = build_random_act_checkpoint(
        tmp / "act", cameras={"front": (64, 64)}, state_dim=8, action_dim=7
    )
    return {
        "path": str(ckpt),
        "observation": {"state": {"observation.state": ["joint_pos", "gripper"]}},
    }


def _torch_module(stack: ExitStack, tmp: Path) -> dict[str, Any]:
    torch = pytest.importorskip("torch")

    class Hold(torch.nn.Module):  # (B, D) state -> (B, 7): hold still, gripper open
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cat([x[:, :6] * 0.0, torch.ones_like(x[:, :1])], dim=1)

    torch.jit.save(torch.jit.script(Hold()), str(tmp / "hold.pt"))
    return {"path": str(tmp / "hold.pt")}


def _noop(stack: ExitStack, tmp: Path) -> dict[str, Any]:
    return {}


def _libero_expert(stack: ExitStack, tmp: Path) -> dict[str, Any]:
    return {"actions": {"space": "osc_pose", "gripper": "pm1_open_neg"}}


def _metaworld_expert(stack: ExitStack, tmp: Path) -> dict[str, Any]:
    return {"actions": {"space": "mocap_delta", "gripper": "pm1_open_neg"}}


def _robosuite_expert(stack: ExitStack, tmp: Path) -> dict[str, Any]:
    return {"actions": {"space": "osc_pose", "gripper": "pm1_open_neg"}}


CASES: dict[str, Case] = {
    "noop": _noop,
    "scripted": _scripted,
    "python": _python,
    "openpi": _openpi,
    "http": _http,
    "lerobot": _lerobot,
    "torch_module": _torch_module,
    "libero_expert": _libero_expert,
    "metaworld_expert": _metaworld_expert,
    "robosuite_expert": _robosuite_expert,
}
SUCCEEDS = {
    "scripted",
    "python",
    "openpi",
    "libero_expert",
    "metaworld_expert",
    "robosuite_expert",
}  # a scripted expert behind each
# The scene each kind is driven on (lift_cube unless named): the LIBERO expert solves
# LIBERO's pick-and-place goals only, on LIBERO's torque-driven Panda (osc_pose).
SCENE_OF = {
    "libero_expert": "libero_scene",
    "metaworld_expert": "metaworld_scene",
    "robosuite_expert": "robosuite_scene",
}


@pytest.fixture(scope="module")
def libero_scene() -> Any:
    from metasim.libero.importer.scene import load_task
    from metasim.scene.compile import compile_scene

    return compile_scene(load_task("libero:libero_spatial/0").scene)


@pytest.fixture(scope="module")
def metaworld_scene() -> Any:
    from metasim.scene.sources import compile_task

    return compile_task("metaworld:MT10/reach-v3")  # the package's expert solves it


def test_every_registered_kind_has_a_case() -> None:
    """Every kind metasim registers (kinds other tests register for faults are not)."""
    builtin = {
        k for k in registered_policies() if policy_kind(k).factory.__module__.startswith("metasim.")
    }
    assert builtin == set(CASES)


@pytest.fixture(scope="module")
def robosuite_scene() -> Any:
    from metasim.scene.sources import compile_task

    return compile_task("robosuite:Lift")  # robosuite's own task, exported on first use


# Kinds whose scene loads from a reference venv (Meta-World's files, robosuite's draws),
# and kinds that start a server or load a checkpoint (20-30 s here).
LANES = {
    "metaworld_expert": pytest.mark.reference,
    "robosuite_expert": pytest.mark.reference,
    "http": pytest.mark.slow,
    "lerobot": pytest.mark.slow,
    "libero_expert": pytest.mark.slow,
}


@pytest.mark.parametrize(
    "kind", [pytest.param(k, marks=LANES[k]) if k in LANES else k for k in sorted(CASES)]
)
def test_policy_kind_contract(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    scene = request.getfixturevalue(SCENE_OF.get(kind, "lift_scene"))
    model = policy_kind(kind).options
    assert issubclass(model, PolicyOptions) and model.model_config.get("extra") == "forbid"
    episodes = [0, 2, 3]
    with ExitStack() as stack:
        options = CASES[kind](stack, tmp_path)
        with pytest.raises(MetasimInputError, match=r"policy\.no_such_option"):
            RolloutSpec.of(kind, {**options, "no_such_option": 1})
        spec = RolloutSpec.of(kind, options, seed=4, num_envs=2, execute=4)
        assert isinstance(spec.options, model)
        records = list(run_task(scene, spec, episodes))
    assert sorted(r.episode for r in records) == episodes
    for r in records:
        assert r.error is None, r.error
        assert r.task == scene.scene.name and r.cell == "nominal" and r.factors == {}
        assert r.seed == episode_seed(4, r.episode)
        limit = scene.max_steps + scene.scene.task.settle_steps
        assert 0 < r.steps <= limit and 0.0 <= r.progress <= 1.0
    if kind in SUCCEEDS:
        assert all(r.success for r in records)
    if kind == "noop":  # holding still never lifts the cube: every episode runs out of time
        assert not any(r.success for r in records)
        assert all(r.steps == limit for r in records)


def test_libero_expert_refuses_what_it_cannot_solve(lift_scene: Any) -> None:
    """On a scene whose goal is not LIBERO pick-and-place, the expert says which predicate
    it cannot handle, at construction."""
    from metasim.policies.base import PolicyContext, make_policy, policy_options

    conv = {"actions": {"space": "osc_pose", "gripper": "pm1_open_neg"}}
    ctx = PolicyContext.of(lift_scene, 1, "osc_pose", policy_options("libero_expert", conv))
    with pytest.raises(ValueError, match=r"the predicate 'lifted'"):
        make_policy("libero_expert", ctx)
