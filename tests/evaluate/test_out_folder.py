"""`metasim eval out=DIR` never writes into a folder that is not a run folder (a user's
files, a LeRobot dataset): exit 2, one paragraph, nothing written. An empty folder and a
run folder (resume) are fine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metasim.cli.main import main

SMALL = ["suite=tabletop", "suite.tasks=[lift_cube]", "episodes=1"]


def _eval(out: Path, *extra: str) -> int:
    return main(["eval", "--quiet", *SMALL, f"out={out}", *extra])


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "files",
    [
        {"summary.json": '{"mine": true}\n'},  # a user's own summary
        {"meta/info.json": "{}\n", "data/chunk-000/file-000.parquet": "x"},  # a dataset
        {"notes.txt": "mine", "run.lock": ""},
    ],
)
def test_eval_refuses_a_folder_that_is_not_a_run_folder(
    tmp_path: Path, files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mine"
    for rel, text in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    before = _tree(out)
    assert _eval(out) == 2
    err = capsys.readouterr().err
    assert f"out={out}" in err and "not empty" in err and "no run of metasim eval" in err
    assert "Traceback" not in err and len(err.strip().split("\n\n")) == 1  # one paragraph
    assert _tree(out) == before  # nothing written, nothing replaced
    assert sorted(p.name for p in out.iterdir()) == sorted({r.split("/")[0] for r in files})


@pytest.mark.slow
def test_eval_into_an_empty_folder_then_resume_it(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    assert _eval(out) == 0
    assert (out / "summary.json").is_file() and (out / "episodes.duckdb").is_file()
    assert _eval(out, "episodes=2") == 2  # a different run is still refused ...
    assert _eval(out) == 0  # ... and the same run resumes into its own folder
    assert json.loads((out / "summary.json").read_text())["tasks"]["lift_cube"]["n"] == 1


def test_resume_names_the_option_that_differs_and_a_damaged_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The resume check (metasim.evaluate.resume) names the policy option that changed;
    a manifest that is not the object eval writes is refused, not a traceback."""
    out = tmp_path / "run"
    assert _eval(out) == 0
    capsys.readouterr()
    assert _eval(out, "policy.execute=2") == 2
    err = capsys.readouterr().err
    assert f"error: {out}: this folder holds results of a run with a different policy" in err
    assert "policy.execute" in err and "Traceback" not in err and err.count("\n") == 1, err
    (out / "manifest.json").write_text("[]\n")
    assert _eval(out) == 2
    err = capsys.readouterr().err
    assert "manifest.json: expected the JSON object metasim eval writes" in err, err


REFUSED = [  # (policy arguments, what the refusal says)
    (["policy=lerobot", "policy.path=/nonexistent"], "/nonexistent: folder does not exist"),
    (["policy=metaworld_expert"], "'mocap_delta' cannot drive a 'position' robot"),
    (["policy=libero_expert"], "the libero_expert drives LIBERO's osc_pose controller"),
]


@pytest.mark.parametrize("existing", [False, True], ids=["new", "empty folder"])
@pytest.mark.parametrize(("policy", "says"), REFUSED, ids=["checkpoint", "space", "factory"])
def test_a_refused_run_writes_no_folder(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    policy: list[str],
    says: str,
    existing: bool,
) -> None:
    """A run refused as it starts (a missing checkpoint, an action space the robot cannot
    take: checked before the folder; a policy that refuses the scene when it is made:
    what it wrote is removed) leaves no folder, so the corrected rerun into the same
    `out=` runs instead of being refused as "a different policy" (issue #33 item 6)."""
    out = tmp_path / "run"
    if existing:
        out.mkdir()
    assert _eval(out, *policy) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and says in err and err.count("\n") == 1, err
    assert out.is_dir() == existing and not (existing and any(out.iterdir()))
    assert _eval(out) == 0  # the corrected run
    assert json.loads((out / "summary.json").read_text())["tasks"]["lift_cube"]["n"] == 1


def _user_duckdb(path: Path) -> None:
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE mine (x INTEGER)")
    con.execute("INSERT INTO mine VALUES (1), (2)")
    con.close()


@pytest.mark.parametrize("variant", ["a_duckdb_database", "not_a_database", "manifest_only"])
def test_eval_refuses_a_folder_that_only_looks_like_a_run_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], variant: str
) -> None:
    """Issue 47 finding 1: a user's own `episodes.duckdb` (a DuckDB database or any other
    file) or `manifest.json` does not make a run folder; only metasim's marker (or a
    legacy run's manifest + store) does. Twice (the old code took the folder on its
    second try): exit 2, one paragraph, the user's files byte for byte, nothing new."""
    out = tmp_path / "mine"
    out.mkdir()
    if variant == "manifest_only":
        (out / "manifest.json").write_text('{"config": {"mine": 1}}\n')
    else:
        (out / "summary.json").write_text('{"mine": true}\n')
        if variant == "a_duckdb_database":
            _user_duckdb(out / "episodes.duckdb")
        else:
            (out / "episodes.duckdb").write_bytes(b"my notes, not a database\n")
    before = _tree(out)
    for _ in range(2):
        assert _eval(out) == 2
        err = capsys.readouterr().err
        assert f"out={out}" in err and "no run of metasim eval" in err and ".metasim-run" in err
        assert "Traceback" not in err and len(err.strip().split("\n\n")) == 1, err
        assert _tree(out) == before  # byte-identical, and nothing new written
        assert sorted(p.name for p in out.iterdir()) == sorted(before)


def test_a_run_folder_of_an_earlier_metasim_resumes_and_links_are_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run folder written before the marker existed (manifest.json + episodes.duckdb,
    the manifest metasim's) still resumes and gets its marker; a marker of a newer
    format is refused. The run's files are replaced atomically, never written through a
    symlink: a `summary.json` linked to a file outside stays a link no more, and the file
    it pointed to is unchanged."""
    from metasim.evaluate.store import MARKER

    out = tmp_path / "run"
    assert _eval(out) == 0
    assert (out / MARKER).is_file()
    summary = json.loads((out / "summary.json").read_text())
    (out / MARKER).unlink()  # as an earlier metasim left it
    precious = tmp_path / "precious.txt"
    precious.write_text("mine\n")
    (out / "summary.json").unlink()
    (out / "summary.json").symlink_to(precious)
    assert _eval(out) == 0
    assert (out / MARKER).is_file() and not (out / "summary.json").is_symlink()
    assert json.loads((out / "summary.json").read_text())["tasks"] == summary["tasks"]
    assert precious.read_text() == "mine\n"
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    capsys.readouterr()
    (out / MARKER).write_text('{"written_by": "metasim run folder", "format": 99}\n')
    assert _eval(out) == 2
    err = capsys.readouterr().err
    assert "format 99, newer than this metasim's" in err and "Traceback" not in err, err
