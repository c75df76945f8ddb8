"""Issue 47 finding 3, the other parts of the resume key's content: a prebuilt task
re-exported from an edited scene (another saved model under the same name), and a
policy whose declared conventions changed, are refused on resume (exit 2, one
paragraph, naming the task or the conventions); the run folder is left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.paths import SCENES
from metasim.scene import prebuilt


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.name != "run.lock"
    }


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """lift_cube prebuilt into `pre/`, one episode of it evaluated into `run/`."""
    pre = tmp_path / "pre"
    assert main(["scene", "prebuild", "lift_cube", "--out", str(pre)]) == 0
    monkeypatch.setenv(prebuilt.ENV, str(pre))
    out = tmp_path / "run"
    argv = ["eval", "--quiet", "suite=prebuilt", "policy=noop", "episodes=1", "num_envs=1"]
    assert main([*argv, f"out={out}"]) == 0
    return out


def _resume_refused(out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    before = _tree(out)
    assert main(["eval", "--quiet", "--resume", str(out), "episodes=2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {out}: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and _tree(out) == before
    return err


def test_a_re_exported_prebuilt_model_is_refused_naming_the_task(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edited = tmp_path / "src" / "lift_cube.yaml"  # the cube twice as heavy
    edited.parent.mkdir()
    text = (SCENES / "lift_cube.yaml").read_text()
    assert "mass: 0.08" in text
    edited.write_text(text.replace("mass: 0.08", "mass: 0.16"))
    other = tmp_path / "other"
    assert main(["scene", "prebuild", str(edited), "--out", str(other)]) == 0
    (new,) = other.glob("*.prebuilt.json")
    # its saved model under lift_cube's name, with its model hash: the typed scene in
    # lift_cube.prebuilt.json is unchanged, only the model the task runs differs
    pre = tmp_path / "pre"
    (pre / "lift_cube.mjb.gz").write_bytes(
        Path(str(new).replace(".prebuilt.json", ".mjb.gz")).read_bytes()
    )
    doc = json.loads((pre / "lift_cube.prebuilt.json").read_text())
    doc[prebuilt.MODEL_HASH] = json.loads(new.read_text())[prebuilt.MODEL_HASH]
    (pre / "lift_cube.prebuilt.json").write_text(json.dumps(doc))
    err = _resume_refused(run, capsys)
    assert "the scene of task 'lift_cube' (prebuilt:lift_cube" in err and "differs" in err, err


def test_changed_policy_conventions_are_refused(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = run / "manifest.json"
    doc = json.loads(path.read_text())
    assert isinstance(doc["policy_conventions"], dict) and doc["policy_conventions"]
    key = sorted(doc["policy_conventions"])[0]
    doc["policy_conventions"][key] = "recorded by another version of the policy"
    path.write_text(json.dumps(doc))
    err = _resume_refused(run, capsys)
    assert "the policy's declared conventions differ from the recorded ones" in err, err
    assert f"({key})" in err and "'lift_cube'" in err, err
