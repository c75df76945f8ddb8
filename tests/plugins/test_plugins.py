"""A plug-in outside `metasim/` (tests/plugins/toy.py) registers a backend, a policy kind,
a scene axis, a runtime axis and a CLI verb by being imported; metasim finds each with no
edit to metasim/: an eval runs on the toy backend with the toy policy under the toy axis,
the toy verb runs, and a runtime axis takes effect without editing `RuntimeNoise`."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import fields, replace
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from metasim.cli.main import main
from metasim.cli.verbs import VERBS
from metasim.envs.noise import RuntimeNoise
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.config import compose
from metasim.paths import SCENES
from metasim.perturb import RUNTIME_AXES, Grid, apply_cell, expand
from metasim.policies.base import POLICY_KINDS
from metasim.scene import load_scene
from metasim.sim import BACKENDS, get_backend


@pytest.fixture
def toy() -> Iterator[ModuleType]:
    """The toy plug-in, imported (its entries registered) and removed again afterwards."""
    mod = importlib.reload(importlib.import_module("tests.plugins.toy"))
    mod.COUNTING_STEPS.clear()
    mod.INSTRUCTIONS.clear()
    yield mod
    for registry, name in mod.NAMES.values():
        registry.unregister(name)
    POLICY_KINDS.unregister("toy_hold")
    VERBS.unregister("toy")


def test_eval_runs_on_a_plugin_backend_with_a_plugin_policy_under_a_plugin_axis(
    toy: ModuleType, tmp_path: Path
) -> None:
    grid = tmp_path / "shout.yaml"
    grid.write_text(
        "name: shout\ndesign: ofat\n"
        "factors:\n  - {name: shout, axis: toy_shout, levels: ['', ' LOUDLY']}\n"
    )
    out = tmp_path / "run"
    args = ["eval", "--quiet", "suite.tasks=[lift_cube]", "episodes=1", "num_envs=1"]
    args += ["backend=toy_counting", "policy=noop", "policy.kind=toy_hold", "+policy.grip=0.5"]
    spec = compose([a for a in args if a not in ("eval", "--quiet")]).rollout
    assert isinstance(spec.options, toy.ToyOptions) and spec.options.grip == 0.5
    assert main([*args, f"perturbation={grid}", f"out={out}"]) == 0
    assert (out / "summary.json").is_file()
    assert toy.COUNTING_STEPS, "the toy backend stepped no env"
    assert any(i.endswith(" LOUDLY") for i in toy.INSTRUCTIONS), toy.INSTRUCTIONS
    assert any(not i.endswith(" LOUDLY") for i in toy.INSTRUCTIONS), toy.INSTRUCTIONS


def test_a_plugin_policy_option_is_typed_and_checked(
    toy: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["eval", "--quiet", "suite.tasks=[lift_cube]", "episodes=1", "policy=noop"]
    args += ["policy.kind=toy_hold", "+policy.grip=wide", f"out={tmp_path / 'run'}"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "policy.grip" in err and "Traceback" not in err


def test_a_plugin_verb_runs(toy: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["toy", "--code", "3"]) == 3
    assert "toy verb ran with code 3" in capsys.readouterr().out
    assert "toy" in VERBS.names() and "libero" in VERBS.names()  # LIBERO's, from its plug-in


def test_a_plugin_backend_is_listed_and_unknown_ones_are_named(toy: ModuleType) -> None:
    assert "toy_counting" in BACKENDS.names()
    assert get_backend("toy_counting").__name__ == "CountingHandler"
    with pytest.raises(KeyError, match=r"unknown backend 'nope'; expected one of \[.*'mujoco'"):
        get_backend("nope")


def test_a_new_runtime_axis_takes_effect_without_editing_runtime_noise(
    toy: ModuleType, lift_scene: object
) -> None:
    scene = load_scene(SCENES / "lift_cube.yaml")
    factor = {"name": "j", "axis": "toy_jitter", "levels": [0.0, 0.05]}
    grid = Grid.model_validate({"name": "t", "design": "ofat", "factors": [factor]})
    nominal, jittered = (apply_cell(scene, grid, cell)[1] for cell in expand(grid))
    assert not nominal.active and jittered.active
    obs = {}
    for name, noise in (("nominal", nominal), ("jittered", jittered)):
        env = MetasimVectorEnv(lift_scene, num_envs=1, noise=noise)
        obs[name] = env.reset(seed=0)[0]["policy"]["ee_pos"]
    assert not np.allclose(obs["nominal"], obs["jittered"])


def test_every_runtime_axis_and_every_noise_field_make_the_noise_active(toy: ModuleType) -> None:
    assert "toy_jitter" in RUNTIME_AXES.names()
    for name in RUNTIME_AXES.names():
        noise = RUNTIME_AXES[name](RuntimeNoise(), 1)
        assert noise != RuntimeNoise() and noise.active, name
    for f in fields(RuntimeNoise):
        assert replace(RuntimeNoise(), **{f.name: 1}).active, f.name


@pytest.mark.parametrize("name", ["mujoco", "mjx", "warp"])
def test_every_backend_takes_nthread(name: str) -> None:
    """`nthread` is part of every backend's constructor (the harness passes it to any)."""
    import inspect

    try:
        cls = get_backend(name)
    except KeyError as exc:
        pytest.skip(str(exc))
    assert "nthread" in inspect.signature(cls.__init__).parameters


def test_a_plugin_cannot_take_a_built_in_kind_s_name() -> None:
    from metasim.policies.base import register_policy

    assert "scripted" in POLICY_KINDS  # the built-in kinds are loaded on this first read
    with pytest.raises(ValueError, match=r"policy kind 'scripted' registered twice"):
        register_policy("scripted")(lambda ctx: None)  # type: ignore[arg-type,return-value]
