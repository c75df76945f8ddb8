"""The shared guards (metasim.guards): every numeric argument of every verb is bounded,
every output path is checked, and refusals are one line with exit code 2."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from metasim import guards
from metasim.cli.check_cmd import check_parser
from metasim.cli.main import build_parser
from metasim.errors import MetasimInputError

# Destinations that name a file or folder the verb writes.
OUTPUT_DESTS = {"out", "plot", "html", "profile", "markdown", "frames", "package"}


def _actions(parser: argparse.ArgumentParser, path: str = "metasim") -> Iterator[tuple]:
    """(command path, action) for every argument of every verb and sub-verb (the plug-ins'
    check verbs under `metasim check`, which runs them)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{path} {name}")
        else:
            yield path, action


ALL = [*_actions(build_parser()), *_actions(check_parser(), "metasim check")]
NUMERIC = [(p, a) for p, a in ALL if hasattr(a.type, "bounds") or a.type in (int, float)]


def test_the_walk_finds_every_verb() -> None:
    verbs = {p.split()[1] for p, _ in ALL if len(p.split()) > 1}
    assert {"eval", "bench", "correlate", "recon", "check", "serve", "report"} <= verbs
    assert {"metasim check libero xcheck", "metasim check metaworld parity"} <= {p for p, _ in ALL}
    assert len(NUMERIC) >= 25


@pytest.mark.parametrize(("command", "action"), NUMERIC, ids=[f"{p} {a.dest}" for p, a in NUMERIC])
def test_every_numeric_argument_is_bounded(command: str, action: argparse.Action) -> None:
    """No `type=int` / `type=float`: each is a guards type with finite bounds that refuses
    the value just past them, inf and nan."""
    assert hasattr(action.type, "bounds"), f"{command} {action.dest}: unbounded {action.type}"
    lo, hi = action.type.bounds
    assert np.isfinite(lo) and np.isfinite(hi) and hi < 2**63
    for bad in (str(hi * 10 + 1), "1e400", "inf", "nan", "-1e30"):
        with pytest.raises(argparse.ArgumentTypeError):
            action.type(bad)
    assert action.type(str(hi)) == hi


# Outputs whose verb checks them itself before any work (and the test that shows it).
CHECKED_BY_VERB = {"metasim report out": "tests/report/test_report_out.py"}  # a file or folder
OUTPUTS = [
    (p, a)
    for p, a in ALL
    if a.dest in OUTPUT_DESTS
    and not hasattr(a.type, "bounds")
    and f"{p} {a.dest}" not in CHECKED_BY_VERB
]


@pytest.mark.parametrize(("command", "action"), OUTPUTS, ids=[f"{p} {a.dest}" for p, a in OUTPUTS])
def test_every_output_path_is_checked(command: str, action: argparse.Action, tmp_path) -> None:
    """An output path under a file is refused while parsing, before any work."""
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    assert getattr(action.type, "output", False), f"{command} {action.dest}: not checked"
    with pytest.raises(argparse.ArgumentTypeError, match="is a file"):
        action.type(str(blocker / "x" / "y.png"))


OUT_FILES = [(p, a) for p, a in OUTPUTS if a.type.__name__ == "output file"]


def test_the_output_files_are_found() -> None:
    names = {f"{p} {a.dest}" for p, a in OUT_FILES}
    assert {"metasim correlate plot", "metasim check metaworld xcheck package"} <= names
    assert len(names) >= 5


@pytest.mark.parametrize(
    ("command", "action"), OUT_FILES, ids=[f"{p} {a.dest}" for p, a in OUT_FILES]
)
def test_an_output_file_is_checked_for_what_it_holds(
    command: str, action: argparse.Action, tmp_path: Path
) -> None:
    """A user's own file named as an output is refused while parsing, and left as it was;
    a missing or empty file is accepted (issue #33 item 1)."""
    settings = tmp_path / "settings.json"
    settings.write_text('{"lr": 0.001, "note": "mine"}\n')
    with pytest.raises(argparse.ArgumentTypeError, match=r"exists and is not .* overwritten"):
        action.type(str(settings))
    assert settings.read_text() == '{"lr": 0.001, "note": "mine"}\n'
    assert action.type(str(tmp_path / "new" / "file")) == tmp_path / "new" / "file"
    (tmp_path / "empty").touch()
    assert action.type(str(tmp_path / "empty")) == tmp_path / "empty"


def _metasim_outputs(tmp_path: Path) -> dict[str, tuple[guards.OutKind, Path]]:
    """One real file of each kind, written by the code that writes it."""
    from metasim.bench.physics import profile_eval_loop
    from metasim.metaworld import xcheck
    from metasim.report.html import HTML_PAGE, page

    png, html, prof = tmp_path / "a.png", tmp_path / "a.html", tmp_path / "a.prof"
    guards.save_png(png, np.zeros((4, 4, 3), np.uint8))
    html.write_text(page("t", "", []))
    profile_eval_loop("lift_cube", 1, 2, prof)
    pkg = tmp_path / "pkg.json"
    pkg.write_text(guards.stamp_json(xcheck.PACKAGE_STAMP, {"key": {}, "rows": {}}))
    return {
        "png": (guards.PNG, png),
        "html": (HTML_PAGE, html),
        "pstats": (guards.PSTATS, prof),
        "profile text": (guards.PROFILE_TEXT, Path(f"{prof}.txt")),
        "package": (xcheck.PACKAGE_FILE, pkg),
    }


def test_metasim_outputs_are_replaceable_and_foreign_files_are_not(tmp_path: Path) -> None:
    """Each kind accepts what metasim writes and refuses the others' files and a user's."""
    outputs = _metasim_outputs(tmp_path)
    user = tmp_path / "user.png"
    Image = pytest.importorskip("PIL.Image")
    Image.new("RGB", (4, 4)).save(user)  # a PNG, but not one metasim wrote
    for name, (kind, path) in outputs.items():
        assert guards.held_problem(path, kind) is None, name
        others = [p for n, (_, p) in outputs.items() if n != name]
        for other in [*others, user]:
            assert "exists and is not" in (guards.held_problem(other, kind) or ""), (name, other)
        with pytest.raises(MetasimInputError, match="exists and is not"):
            guards.check_out_file(user, "--x", kind)


def test_image_header_is_checked_before_decoding(tmp_path: Path, monkeypatch) -> None:
    from PIL import Image

    path = tmp_path / "img.png"
    Image.new("RGB", (64, 48)).save(path)
    assert guards.image_size(path) == (64, 48)
    monkeypatch.setenv("METASIM_MAX_PIXELS", "1000")
    with pytest.raises(MetasimInputError, match="64×48 pixels, over the limit of 1000"):
        guards.image_size(path)


def test_npy_header_is_checked_before_loading(tmp_path: Path) -> None:
    huge = tmp_path / "huge.npy"
    with open(huge, "wb") as f:  # a header that claims 40 GB, and no data
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": (100_000, 100_000)}
        )
    with pytest.raises(MetasimInputError, match="over the limit"):
        guards.load_npy(huge)
    text = tmp_path / "text.npy"
    np.save(text, np.array(["a", "b"]))
    with pytest.raises(MetasimInputError, match="expected a numeric"):
        guards.load_npy(text)


def test_json_depth_and_size_are_bounded(tmp_path: Path, monkeypatch) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(MetasimInputError, match="nested more than 64 levels"):
        guards.load_json(deep)
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps({"a": [[1]]}))
    assert guards.load_json(ok) == {"a": [[1]]}
    monkeypatch.setenv("METASIM_JSON_MAX_BYTES", "4")
    with pytest.raises(MetasimInputError, match="over the limit of 4 bytes"):
        guards.load_json(ok)
