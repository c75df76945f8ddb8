"""Every verb that opens a run folder reads its files through one validating loader
(`metasim.evaluate.run_files`, issue #33 "generic mechanisms"): a damaged manifest,
summary or parquet export, or a JSON-lines results file over its size limit, is one line
naming the file with exit 2, whichever verb reads it, and the folder is left as it was."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.evaluate import run_files

# `metasim check CHECK --benchmark NAME`: the one spelling of a benchmark's checks.
XCHECK_ARGV = ["check", "--benchmark", "libero", "xcheck"]

SMALL = ["suite=tabletop", "suite.tasks=[lift_cube]", "episodes=1"]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished run of lift_cube (1 episode)."""
    out = tmp_path_factory.mktemp("runs") / "run"
    assert main(["eval", "--quiet", *SMALL, f"out={out}"]) == 0
    return out


@pytest.fixture
def run(made: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(made, copy)
    return copy


DAMAGE = {  # file -> what is written over it
    "manifest.json": b"[]\n",
    "summary.json": b'{"tasks": {oops\n',
    "episodes.parquet": b"PAR1 cut short",
}
READERS = {  # verb -> the files it reads
    "eval --resume": (["eval", "--resume", "{run}"], ("manifest.json",)),
    "libero xcheck --run": ([*XCHECK_ARGV, "--run", "{run}"], ("manifest.json",)),
    "report": (["report", "{run}", "--videos", "0", "--out", "{tmp}/page"], ("summary.json",)),
    "compare": (["compare", "{run}", "{run}"], ("summary.json", "episodes.parquet")),
}
CASES = [(verb, name) for verb, (_, names) in READERS.items() for name in names]


@pytest.mark.parametrize(("verb", "name"), CASES, ids=[f"{v}-{n}" for v, n in CASES])
def test_a_damaged_file_is_one_line_naming_it_for_every_reader(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], verb: str, name: str
) -> None:
    (run / name).write_bytes(DAMAGE[name])
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    argv = [a.format(run=run, tmp=tmp_path) for a in READERS[verb][0]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {run / name}: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


def test_a_results_file_over_its_limit_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append-only results file (xcheck.jsonl, collect's episode lines) is read whole:
    over METASIM_JSONL_MAX_BYTES it is refused before it is read."""
    path = tmp_path / "xcheck.jsonl"
    path.write_text('{"a": 1}\n' * 100)
    assert run_files.read_records(path, frozenset({"a"}), "a line") == [{"a": 1}] * 100
    monkeypatch.setenv("METASIM_JSONL_MAX_BYTES", "512")
    with pytest.raises(run_files.MetasimInputError, match="over the limit of 512 bytes"):
        run_files.read_records(path, frozenset({"a"}), "a line")
