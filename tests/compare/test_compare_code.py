"""The verbs of issue 34 that open run folders (`metasim compare --html --videos`,
`metasim report --compare`, `metasim eval --resume`) never import or run code a run
folder's files name unless `--allow-code` names it, and `compare --plot/--html` replace
only files metasim wrote (issue 33's guarantees, on issue 34's verbs)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from metasim.cli.main import main

POPEN = "subprocess:Popen"


def _foreign(run: Path, dest: Path, marker: Path, files: tuple[str, ...]) -> Path:
    """A copy of `run` whose `files` name a python policy that would touch `marker`."""
    shutil.copytree(run, dest)
    policy = {"kind": "python", "target": POPEN, "args": {"args": ["touch", str(marker)]}}
    for name in files:
        data = json.loads((dest / name).read_text())
        data["config"]["policy"] = policy
        (dest / name).write_text(json.dumps(data))
    return dest


def _appears(marker: Path, seconds: float = 10.0) -> bool:
    deadline = time.time() + seconds
    while not marker.exists() and time.time() < deadline:
        time.sleep(0.1)
    return marker.exists()


@pytest.mark.slow
def test_compare_and_report_replays_never_run_code_named_by_a_run_folder(
    runs: dict[str, Path], tmp_path: Path, capsys
) -> None:
    marker = tmp_path / "pwned"
    theirs = _foreign(runs["jitter10"], tmp_path / "theirs", marker, ("summary.json",))
    page = tmp_path / "cmp.html"
    argv = ["compare", str(runs["expert"]), str(theirs), "--html", str(page), "--videos", "1"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "warning: B videos not replayed:" in err and f"'{POPEN}'" in err, err
    assert f"add --allow-code {POPEN} if you trust it" in err
    html = page.read_text()
    assert "B not replayed:" in html and html.count("<video") == 1  # A's replay only
    report = tmp_path / "r.html"
    argv = ["report", str(runs["expert"]), "--compare", str(theirs), "--out", str(report)]
    assert main([*argv, "--videos", "1"]) == 0
    assert "warning: B videos not replayed:" in capsys.readouterr().err
    time.sleep(0.5)
    assert not marker.exists()
    argv = ["compare", str(runs["expert"]), str(theirs), "--html", str(page), "--videos", "1"]
    assert main([*argv, "--allow-code", POPEN]) == 0
    assert _appears(marker)  # allowed by name: the replay built the policy


def test_compare_outputs_replace_only_files_metasim_wrote(
    runs: dict[str, Path], tmp_path: Path, capsys
) -> None:
    mine = tmp_path / "settings.json"
    mine.write_text('{"keep": "me"}\n')
    for flag in ("--html", "--plot"):
        with_out = ["compare", str(runs["expert"]), str(runs["jitter10"]), flag, str(mine)]
        assert main(with_out) == 2
        assert "would be overwritten" in capsys.readouterr().err
    assert mine.read_text() == '{"keep": "me"}\n'
    page, png = tmp_path / "cmp.html", tmp_path / "p.png"
    argv = ["compare", str(runs["expert"]), str(runs["jitter10"]), "--html", str(page)]
    for _ in range(2):  # the second run replaces what the first wrote
        assert main([*argv, "--plot", str(png)]) == 0


def test_eval_resume_never_builds_code_named_by_the_manifest(
    runs: dict[str, Path], tmp_path: Path, capsys
) -> None:
    marker = tmp_path / "pwned"
    theirs = _foreign(runs["other_suite"], tmp_path / "theirs", marker, ("manifest.json",))
    assert main(["eval", "--quiet", "--resume", str(theirs), "episodes=3"]) == 2
    err = capsys.readouterr().err
    assert f"add --allow-code {POPEN} if you trust it" in err and "Traceback" not in err, err
    time.sleep(0.5)
    assert not marker.exists()
    assert main(["eval", "--quiet", "--allow-code", POPEN, "episodes=1"]) == 2
    assert "only --resume RUN_DIR takes it" in capsys.readouterr().err
    (theirs / "manifest.json").write_text("[]")
    assert main(["eval", "--quiet", "--resume", str(theirs)]) == 2
    err = capsys.readouterr().err
    assert "manifest.json" in err and "Traceback" not in err, err


def test_task_text_names_code_in_every_adapter_kind() -> None:
    """`task_text` is an option of every adapter kind (issue 31): each names the code it
    imports, so a run folder's `task_text` is refused like `policy.target` (issue 33)."""
    from metasim.policies.base import code_named, code_refusal
    from metasim.policies.lerobot_policy import LeRobotOptions
    from metasim.policies.remote import HttpOptions, OpenpiOptions, PythonOptions

    ref = "metasim.metaworld.lerobot_tasks:lerobot_task_text"
    for kind, required in (
        (LeRobotOptions, {"path": "ckpt"}),
        (OpenpiOptions, {}),
        (HttpOptions, {}),
    ):
        opts = kind.model_validate({**required, "task_text": ref})
        assert code_named(opts) == [ref], kind
        assert f"--allow-code {ref}" in code_refusal(opts, [], "manifest.json", "--allow-code")
        assert code_refusal(opts, [ref], "manifest.json", "--allow-code") == ""
    opts = PythonOptions.model_validate({"target": POPEN, "task_text": ref})
    assert sorted(code_named(opts)) == sorted([POPEN, ref])
