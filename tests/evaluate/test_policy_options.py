"""Policy options are validated against the kind's registered model before anything is
written; settings the harness cannot honour are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.errors import MetasimInputError
from metasim.evaluate.config import EvalConfig, compose
from metasim.paths import POLICIES
from metasim.policies.base import PolicyOptions, policy_kind, registered_policies
from metasim.yamlio import load_yaml


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (["policy=metasim_remote", "policy.port=abc"], "policy.port"),
        (["policy=metasim_remote", "policy.port=70000"], "policy.port"),
        (["policy=openpi", "+policy.prot=8000"], "policy.prot"),
        (["policy=scripted", "+policy.speed=2"], "policy.speed"),
        (["policy=scripted", "+policy.actions.gripper=half"], "policy.actions.gripper"),
        (["policy=openvla_http", "policy.timeout_s=-1"], "policy.timeout_s"),
    ],
)
def test_a_bad_policy_option_exits_2_before_the_run_folder_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], overrides: list[str], needle: str
) -> None:
    out = tmp_path / "run"
    code = main(
        ["eval", "--quiet", "suite.tasks=[lift_cube]", "episodes=1", *overrides, f"out={out}"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err and "Traceback" not in err
    assert not out.exists()


def test_device_other_than_cpu_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    code = main(["eval", "--quiet", "suite.tasks=[lift_cube]", "device=cuda", f"out={out}"])
    err = capsys.readouterr().err
    assert code == 2
    assert "device" in err and "policy.device" in err and "Traceback" not in err
    assert not out.exists()
    assert compose(["device=cpu"]).device == "cpu"


def test_action_space_declares_the_convention_when_actions_are_not_given() -> None:
    cfg = compose(["policy=scripted", "policy.action_space=joint_pos"])
    assert cfg.rollout.actions.space == "joint_pos"
    assert compose(["policy=scripted"]).rollout.actions.space == "ee_delta"


def test_the_rollout_spec_is_built_once_with_the_typed_options() -> None:
    cfg = compose(["policy=metasim_remote", "policy.port=9001", "num_envs=3", "seed=7"])
    spec = cfg.rollout
    assert spec is cfg.rollout  # built once, then the same object
    assert spec.policy == "openpi" and spec.num_envs == 3 and spec.seed == 7
    assert isinstance(spec.options, policy_kind("openpi").options)
    assert spec.options.port == 9001  # type: ignore[attr-defined]


def test_every_registered_kind_declares_an_options_model_that_forbids_unknown_keys() -> None:
    for name in registered_policies():
        model = policy_kind(name).options
        assert issubclass(model, PolicyOptions)
        assert model.model_config.get("extra") == "forbid", name


def test_a_policy_that_cannot_drive_the_scene_exits_2_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy's own refusal at construction (noop cannot hold still in absolute poses)
    is reported as an input error naming the policy and the scene."""
    code = main(
        [
            "eval",
            "--quiet",
            "policy=noop",
            "+policy.actions.space=ee_pose",
            "episodes=1",
            "suite.tasks=[lift_cube]",
            f"out={tmp_path / 'run'}",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "policy 'noop' on scene 'lift_cube'" in err and "ee_pose" in err
    assert "Traceback" not in err


PRESETS = sorted(p.stem for p in POLICIES.glob("*.yaml"))


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_states_a_registered_kind_and_composes_into_its_typed_model(
    preset: str,
) -> None:
    """Each policies/*.yaml names its kind (openvla_http runs kind http and says so), and
    the composed config is that kind's model: the typed object `run_task` receives."""
    data = load_yaml(POLICIES / f"{preset}.yaml", "policy config")
    assert data.get("kind") in registered_policies(), preset
    cfg = compose([f"policy={preset}"])
    model = policy_kind(data["kind"]).options
    assert cfg.policy.kind == data["kind"] and isinstance(cfg.policy, model)
    assert type(cfg.rollout.options) is model  # the kind's own model travels down
    assert EvalConfig.model_validate(cfg.model_dump(mode="json")).rollout == cfg.rollout


@pytest.mark.slow
def test_options_are_typed_at_compose_time_not_later() -> None:
    cfg = compose(["policy=openvla_http", "policy.timeout_s=5", "policy.execute=2"])
    assert isinstance(cfg.policy, policy_kind("http").options)
    assert cfg.policy.timeout_s == 5.0  # type: ignore[attr-defined]
    assert cfg.rollout.execute == 2 and not hasattr(cfg.rollout.options, "execute")
    with pytest.raises(MetasimInputError, match=r"policy\.kind: unknown policy kind 'nope'"):
        compose(["policy=noop", "policy.kind=nope"])


def test_a_context_holds_typed_options_only(lift_scene: object) -> None:
    """No dict travels down: a context built without options holds the common model, and
    a policy reading another kind's model is a programming error, not a silent parse."""
    from metasim.policies.base import PolicyContext
    from metasim.policies.remote import OpenpiOptions

    ctx = PolicyContext.of(lift_scene, 1, "ee_delta")  # type: ignore[arg-type]
    assert type(ctx.options) is PolicyOptions
    with pytest.raises(TypeError, match="not OpenpiOptions"):
        ctx.typed(OpenpiOptions)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["policy=scripted", "+policy.speed=2"], "policy.speed"),
        (["policy=openvla_http"], "policy=http is a client"),
        (["policy=metasim_remote", "policy.port=abc"], "policy.port"),
    ],
)
def test_serve_takes_the_same_typed_path(
    capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    assert main(["serve", *args, "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
