"""Policy options are validated against the kind's registered model before anything is
written; settings the harness cannot honour are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.evaluate.config import compose
from metasim.policies.base import PolicyOptions, policy_kind, registered_policies


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
