"""An output file named by the user that exists but is no regular file (a named pipe, a
device) is refused before any work (issue 47, finding 11: `compare --plot` into a fifo
was an io.UnsupportedOperation traceback). The check is in `guards.out_problem`, so
every output file option (`out_file`, `check_out_file`) refuses it, exit 2; and the
profile and scatter PNGs are written through `write_atomic` (renamed over the target,
never written through it)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from metasim.errors import MetasimInputError
from metasim.guards import PNG, check_out_file, out_file
from tests.cli_refusal import refused
from tests.evaluate.test_episode_keys import make_run


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.png"
    os.mkfifo(path)
    return path


def test_check_out_file_refuses_a_pipe_and_a_device(fifo: Path) -> None:
    for target in (fifo, Path("/dev/null")):
        with pytest.raises(MetasimInputError) as exc:
            check_out_file(target, "--plot", PNG)
        assert "is not a regular file" in str(exc.value) and str(target) in str(exc.value)
        with pytest.raises(argparse.ArgumentTypeError, match="is not a regular file"):
            out_file(PNG)(str(target))


def test_absent_files_and_links_are_still_accepted(tmp_path: Path) -> None:
    assert check_out_file(tmp_path / "new.png", "--plot", PNG) == tmp_path / "new.png"
    (tmp_path / "dangling.png").symlink_to(tmp_path / "nowhere")
    assert check_out_file(tmp_path / "dangling.png", "--plot", PNG)


OPTIONS = {
    "compare --plot": ["compare", "{a}", "{b}", "--plot", "{fifo}"],
    "compare --html": ["compare", "{a}", "{b}", "--html", "{fifo}"],
    "report --out": ["report", "{a}", "--videos", "0", "--out", "{fifo}"],
    "correlate --plot": ["correlate", "--sim", "{a}", "--real", "{a}/r.csv", "--plot", "{fifo}"],
}


@pytest.mark.parametrize("argv", list(OPTIONS.values()), ids=list(OPTIONS))
def test_every_output_option_refuses_a_pipe(
    tmp_path: Path, fifo: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    a = make_run(tmp_path / "a", [True, False])
    b = make_run(tmp_path / "b", [True, True])
    err = refused(capsys, [x.format(a=a, b=b, fifo=fifo) for x in argv])
    assert str(fifo) in err and "not a regular file" in err


def test_the_profile_png_replaces_a_link_instead_of_writing_through_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from metasim.cli.main import main

    a = make_run(tmp_path / "a", [True, False])
    b = make_run(tmp_path / "b", [True, True])
    mine = tmp_path / "mine.png"
    mine.write_bytes(b"")  # empty: replaceable, and must stay as it is
    link = tmp_path / "plot.png"
    link.symlink_to(mine)
    assert main(["compare", str(a), str(b), "--reps", "50", "--plot", str(link)]) == 0
    assert not link.is_symlink() and link.read_bytes().startswith(b"\x89PNG")
    assert mine.read_bytes() == b""
