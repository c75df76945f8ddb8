"""`metasim report RUN --out X`: an existing folder gets report.html inside it, a path
that cannot be a file is refused with exit 2, and no temporary file is ever left."""

from __future__ import annotations

from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.evaluate.config import compose
from metasim.evaluate.runner import run_eval


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report_out")
    out = root / "run"
    run_eval(compose(["episodes=2", "num_envs=2", "suite.tasks=[lift_cube]", f"out={out}"]))
    return out


def leftovers(*folders: Path) -> list[Path]:
    return [p for f in folders for p in f.rglob("*") if "tmp" in p.name]


@pytest.mark.slow
def test_out_is_an_existing_folder(run_dir: Path, tmp_path: Path, capsys) -> None:
    target = tmp_path / "reports"
    target.mkdir()
    (target / "notes.txt").write_text("keep me\n")
    assert main(["report", str(run_dir), "--out", str(target), "--videos", "0"]) == 0
    html = (target / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "Success per task" in html
    assert f"report: {target / 'report.html'}" in capsys.readouterr().out
    assert (target / "notes.txt").read_text() == "keep me\n"
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt", "report.html"]
    assert leftovers(tmp_path, run_dir) == []
    assert not (tmp_path / "reports.tmp").exists()


def test_out_that_cannot_be_written_exits_2(run_dir: Path, tmp_path: Path, capsys) -> None:
    afile = tmp_path / "a_file"
    afile.write_text("x")
    occupied = tmp_path / "occupied"
    (occupied / "report.html").mkdir(parents=True)  # a folder where the file would go
    for out in (afile / "report.html", afile / "deeper" / "r.html", occupied):
        assert main(["report", str(run_dir), "--out", str(out), "--videos", "0"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: --out {out}: ") and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1
    assert afile.read_text() == "x"
    assert leftovers(tmp_path, run_dir) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "occupied"]


def test_out_naming_a_users_file_is_refused_and_a_report_is_replaced(
    run_dir: Path, tmp_path: Path, capsys
) -> None:
    """`--out notes.html` (a page the user wrote) is refused and kept; a report written
    before is replaced (issue #33 item 1: output files are checked for what they hold)."""
    notes = tmp_path / "notes.html"
    notes.write_text("<!DOCTYPE html><html><body>my notes</body></html>\n")
    assert main(["report", str(run_dir), "--out", str(notes), "--videos", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --out {notes}: ") and "is not an HTML page" in err, err
    assert notes.read_text() == "<!DOCTYPE html><html><body>my notes</body></html>\n"
    again = tmp_path / "r.html"
    for _ in range(2):
        assert main(["report", str(run_dir), "--out", str(again), "--videos", "0"]) == 0
    assert "Success per task" in again.read_text()


def test_report_never_runs_code_named_by_the_run_folder(
    run_dir: Path, tmp_path: Path, capsys
) -> None:
    """A summary.json whose policy is `python` with target subprocess:Popen is reported
    without replaying it (nothing is imported or called) and says how to allow it; with
    `--allow-code` naming the target the replay runs it (issue #33 item 3)."""
    import json
    import shutil
    import time

    run = tmp_path / "theirs"
    shutil.copytree(run_dir, run)
    marker = tmp_path / "pwned"
    summary = json.loads((run / "summary.json").read_text())
    summary["config"]["policy"] = {
        "kind": "python", "target": "subprocess:Popen", "args": {"args": ["touch", str(marker)]}
    }  # fmt: skip
    (run / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "r.html"
    assert main(["report", str(run), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: videos not replayed:" in err and "'subprocess:Popen'" in err, err
    assert "add --allow-code subprocess:Popen if you trust it" in err
    assert "Not replayed:" in out.read_text()
    time.sleep(0.5)
    assert not marker.exists()
    argv = ["report", str(run), "--out", str(out), "--allow-code", "subprocess:Popen"]
    assert main([*argv, "--videos", "1"]) == 0
    deadline = time.time() + 10
    while not marker.exists() and time.time() < deadline:
        time.sleep(0.1)
    assert marker.exists()  # allowed by name: the replay built the policy
