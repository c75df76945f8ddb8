"""The resume key includes content (issue 47): a resume whose task's scene changed since
its episodes ran (a YAML edit; likewise a re-exported prebuilt or an updated benchmark
task, see metasim.evaluate.content) is refused with exit 2 naming the task, instead of
mixing the outcomes of two scenes. A manifest from before content hashes resumes with a
note and records them from then on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.paths import SCENES


def _scene(folder: Path, time_limit: float) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / "lift_cube.yaml"
    text = (SCENES / "lift_cube.yaml").read_text()
    assert "time_limit: 8.0" in text
    path.write_text(text.replace("time_limit: 8.0", f"time_limit: {time_limit}"))
    return path


def test_resume_refuses_a_changed_scene_naming_the_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scene = _scene(tmp_path / "scenes", 0.3)
    out = tmp_path / "run"
    args = ["eval", "--quiet", "suite=tabletop", f"suite.tasks=[{scene}]", f"out={out}"]
    assert main([*args, "episodes=2"]) == 0
    capsys.readouterr()

    _scene(tmp_path / "scenes", 0.5)  # the scene file edited after the run
    assert main(["eval", "--quiet", "--resume", str(out), "episodes=3"]) == 2
    err = capsys.readouterr().err
    assert f"error: {out}: the scene of task 'lift_cube'" in err and "differs" in err, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert main([*args, "episodes=2"]) == 2  # the same refusal without --resume
    capsys.readouterr()
    recorded = json.loads((out / "manifest.json").read_text())["scenes"]["lift_cube"]
    assert recorded["file"] == str(scene) and len(recorded["sha256"]) == 64

    _scene(tmp_path / "scenes", 0.3)  # restored: the same content resumes
    assert main(["eval", "--quiet", "--resume", str(out), "episodes=3"]) == 0
    assert json.loads((out / "summary.json").read_text())["tasks"]["lift_cube"]["n"] == 3

    # a manifest from before content hashes: resumed with a note, recorded from then on
    path = out / "manifest.json"
    old = json.loads(path.read_text())
    del old["scenes"]
    path.write_text(json.dumps(old))
    capsys.readouterr()
    assert main(["eval", "--quiet", "--resume", str(out), "episodes=3"]) == 0
    assert "records no content hash of its scenes" in capsys.readouterr().err
    assert json.loads(path.read_text())["scenes"]["lift_cube"] == recorded
    _scene(tmp_path / "scenes", 0.5)
    assert main(["eval", "--quiet", "--resume", str(out), "episodes=3"]) == 2
