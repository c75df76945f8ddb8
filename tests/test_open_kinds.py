"""Open kinds: a predicate kind and a fixture kind registered from outside the metasim
package (tests/toy_bench/kinds.py) validate in a scene YAML, are named by its errors,
appear in the JSON Schema, compile and evaluate in an env; a kind registered after the
schema was first built is accepted, and rejected again once removed; an observation term
registered from outside is observed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from metasim.cli.main import main
from metasim.envs.terms import OBS_TERMS, Layout, ObsTerm, policy_terms
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.errors import MetasimInputError
from metasim.scene import compile_scene, load_scene
from metasim.scene.kinds import PREDICATE_KINDS
from metasim.scene.predicate_base import PredicateBase
from metasim.scene.schema import AllOf, Not, Scene
from metasim.scene.schema_base import Strict
from metasim.sim.base import Kinematics
from tests.toy_bench.kinds import ToyNear, ToyPadSpec, near

SCENE = """\
name: toy_pad_task
fixtures:
  - {type: table, name: table}
  - {type: toy_pad, name: pad, pos: [0.5, 0.0, 0.0], half_size: 0.05, jitter: 0.08}
objects:
  - {name: cube, shape: box, size: [0.02, 0.02, 0.02], pos: [0.5, 0.0, 0.02]}
task:
  instruction: leave the cube on the pad
  success:
    all:
      - toy_near: {object: cube, target: pad, radius: 0.05}
      - not: {lifted: {object: cube, height: 0.1}}
  time_limit: 2.0
"""


def _write(tmp_path: Path, text: str = SCENE, name: str = "toy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _error(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line `metasim scene validate` prints for `path` (exit code 2)."""
    assert main(["scene", "validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert str(path) in err
    return err


def test_toy_kinds_validate_in_a_scene_yaml(tmp_path: Path) -> None:
    scene = load_scene(_write(tmp_path))
    assert isinstance(scene.fixtures[1], ToyPadSpec) and scene.fixtures[1].jitter == 0.08
    success = scene.task.success
    assert isinstance(success, AllOf)
    assert isinstance(success.all[0], ToyNear) and isinstance(success.all[1], Not)
    assert success.all[0].toy_near.radius == 0.05
    # a model round-trips through its YAML form
    again = Scene.model_validate(scene.model_dump(by_alias=True))
    assert again == scene


def test_toy_kinds_are_named_by_scene_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_kind = _write(tmp_path, SCENE.replace("toy_near:", "toy_nera:"), "bad_kind.yaml")
    err = _error(bad_kind, capsys)
    assert "line 11, task.success.all[0]: unknown predicate 'toy_nera'" in err
    assert "(did you mean 'toy_near'?)" in err and "lifted, " in err and "toy_near" in err
    bad_type = _write(tmp_path, SCENE.replace("type: toy_pad", "type: toy_pod"), "bad_type.yaml")
    err = _error(bad_type, capsys)
    assert "line 4, fixtures[1].type: unknown type 'toy_pod' (did you mean 'toy_pad'?)" in err
    assert "expected one of 'table'" in err and "'toy_pad'" in err
    bad_key = _write(tmp_path, SCENE.replace("jitter:", "jiter:"), "bad_key.yaml")
    err = _error(bad_key, capsys)
    assert "fixtures[1].jiter: unknown key 'jiter' (did you mean 'jitter'?)" in err
    assert "allowed keys: name, type, pos, half_size, rgba, jitter" in err
    bad_arg = _write(tmp_path, SCENE.replace("radius: 0.05", "radius: -1"), "bad_arg.yaml")
    err = _error(bad_arg, capsys)
    assert "task.success.all[0].toy_near.radius: expected a number > 0, got -1" in err
    bad_ref = _write(tmp_path, SCENE.replace("target: pad", "target: mat"), "bad_ref.yaml")
    err = _error(bad_ref, capsys)
    assert "task.success.all[0].toy_near.target: names body 'mat'" in err and "pad" in err


def test_toy_kinds_appear_in_the_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "scene"]) == 0
    schema = json.loads(capsys.readouterr().out)
    defs = schema["$defs"]
    assert defs["ToyPadSpec"]["properties"]["type"]["const"] == "toy_pad"
    assert "jitter" in defs["ToyPadSpec"]["properties"]
    fixtures = schema["properties"]["fixtures"]["items"]
    assert fixtures["discriminator"]["mapping"]["toy_pad"] == "#/$defs/ToyPadSpec"
    assert fixtures["discriminator"]["mapping"]["table"] == "#/$defs/TableSpec"
    success = defs["TaskSpec"]["properties"]["success"]["oneOf"]
    assert {"$ref": "#/$defs/ToyNear"} in success and {"$ref": "#/$defs/Lifted"} in success
    assert {"$ref": "#/$defs/ToyNear"} in defs["AllOf"]["properties"]["all"]["items"]["oneOf"]


def test_toy_kinds_compile_and_evaluate_in_an_env(tmp_path: Path) -> None:
    """The pad is built, re-placed at every reset by its kind, and `toy_near` holds in
    exactly the envs whose drawn pad lies within 5 cm of the cube."""
    compiled = compile_scene(load_scene(_write(tmp_path)), source=tmp_path / "toy.yaml")
    assert compiled.model.site("pad/center").id >= 0
    env = MetasimVectorEnv(compiled, num_envs=8, seed=3, autoreset=False)
    env.reset(seed=3)
    hold = np.zeros((8, env.controller.dim))
    hold[:, -1] = 1.0
    obs, _, _, _, extras = env.step(hold)
    poses = env.fixture_poses()
    assert poses is not None and poses.names == ("pad",)
    pad = poses.pos[:, 0]
    assert len({tuple(p) for p in pad[:, :2]}) == 8  # one draw per episode
    np.testing.assert_allclose(obs["privileged"]["fixture_body_pos"][:, 1], pad, atol=1e-12)
    cube = obs["privileged"]["object_pos"][:, 0]
    expected = near(cube, pad, 0.05)
    assert 0 < expected.sum() < 8  # both outcomes occur with this seed
    np.testing.assert_array_equal(extras["success"], expected)
    env.close()


def test_a_kind_registered_after_the_schema_was_built(tmp_path: Path) -> None:
    path = _write(tmp_path, SCENE.replace("toy_near:", "toy_far:"), "late.yaml")
    load_scene(_write(tmp_path))  # the schema is built (with the toy kinds)
    with pytest.raises(MetasimInputError, match="unknown predicate 'toy_far'"):
        load_scene(path)

    class ToyFarArgs(Strict):
        object: str
        target: str
        radius: float

    class ToyFar(PredicateBase):
        toy_far: ToyFarArgs

    PREDICATE_KINDS.register("toy_far", ToyFar)
    try:
        scene = load_scene(path)
        assert isinstance(scene.task.success, AllOf)
        assert isinstance(scene.task.success.all[0], ToyFar)
    finally:
        PREDICATE_KINDS.unregister("toy_far")
    with pytest.raises(MetasimInputError, match="unknown predicate 'toy_far'"):
        load_scene(path)


def _pad_offset(layout: Layout) -> Callable[[Kinematics], np.ndarray]:
    """Reader of the (B, 2) x-y offset of the cube from the pad."""
    cube, pad = layout.compiled.index.bodies["cube"], layout.compiled.index.bodies["pad"]
    return lambda kin: kin.body_pos[:, cube, :2] - kin.body_pos[:, pad, :2]


def test_an_observation_term_registered_from_outside(tmp_path: Path) -> None:
    compiled = compile_scene(load_scene(_write(tmp_path)), source=tmp_path / "toy.yaml")
    OBS_TERMS.register("toy_pad_offset", ObsTerm("policy", lambda lay: (2,), make=_pad_offset))
    try:
        assert "toy_pad_offset" in policy_terms()  # a policy may ask for it as a state part
        env = MetasimVectorEnv(compiled, num_envs=2, seed=0, autoreset=False)
        obs, _ = env.reset(seed=0)
        assert env.single_observation_space["policy"]["toy_pad_offset"].shape == (2,)
        kin, bodies = env.handler.kinematics(), compiled.index.bodies
        want = kin.body_pos[:, bodies["cube"], :2] - kin.body_pos[:, bodies["pad"], :2]
        np.testing.assert_array_equal(obs["policy"]["toy_pad_offset"], want)
        env.close()
    finally:
        OBS_TERMS.unregister("toy_pad_offset")
    assert "toy_pad_offset" not in policy_terms()


def test_a_kind_registered_under_another_name_than_its_key_is_refused(tmp_path: Path) -> None:
    load_scene(_write(tmp_path))  # the schema is built: a registration rebuilds it now

    class Misnamed(PredicateBase):
        close_to: float

    with pytest.raises(TypeError, match=r"predicate kind 'near_to' \(.*Misnamed\) is keyed"):
        try:
            PREDICATE_KINDS.register("near_to", Misnamed)
        finally:
            PREDICATE_KINDS.unregister("near_to")
    assert isinstance(load_scene(_write(tmp_path)).task.success, AllOf)
