"""metasim's append-only results files (collect's meta/metasim_episodes.jsonl, the LIBERO
xcheck's xcheck.jsonl) are appended and cut through `metasim.appends`, which never follows
a symlink nor blocks on a pipe, and read by `run_files.read_records`, which refuses both
(issue 47: collect's append followed a symlink out of its folder)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from metasim.appends import append_text, cut_to
from metasim.errors import MetasimInputError
from metasim.evaluate.run_files import read_records

KEYS = frozenset({"task"})


@pytest.fixture
def precious(tmp_path: Path) -> Path:
    p = tmp_path / "precious.txt"
    p.write_text("the user's own file\n")
    return p


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_appends_to_a_new_and_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    append_text(path, '{"task": "a"}\n')
    append_text(path, '{"task": "b"}\n{"task": "c"')
    assert [r["task"] for r in read_records(path, KEYS, "a record", True)] == ["a", "b"]
    assert path.read_text() == '{"task": "a"}\n{"task": "b"}\n'  # the partial line cut


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlink_is_refused_and_its_target_unchanged(
    tmp_path: Path, precious: Path, dangling: bool
) -> None:
    target = tmp_path / "absent.txt" if dangling else precious
    before = digest(precious)
    link = tmp_path / "out" / "r.jsonl"
    link.parent.mkdir()
    link.symlink_to(target)
    for act in (lambda: append_text(link, "x\n"), lambda: cut_to(link, 0)):
        with pytest.raises(MetasimInputError) as err:
            act()
        assert str(err.value).startswith(f"error: {link}: is a symbolic link")
        assert "\n" not in str(err.value)
    with pytest.raises(MetasimInputError, match="got a symbolic link"):
        read_records(link, KEYS, "a record")
    assert digest(precious) == before and not (tmp_path / "absent.txt").exists()


def test_a_pipe_or_folder_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "r.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(MetasimInputError, match="expected a regular file, got a pipe"):
        append_text(fifo, "x\n")  # O_NONBLOCK: no reader, no wait
    with pytest.raises(MetasimInputError, match="got a pipe, device or folder"):
        read_records(fifo, KEYS, "a record")
    folder = tmp_path / "d.jsonl"
    folder.mkdir()
    with pytest.raises(MetasimInputError, match=r"regular file|folder"):
        append_text(folder, "x\n")
