"""Hostile and oversized YAML (issue 12, items 1 and 2): every YAML metasim reads goes
through metasim.yamlio.load_yaml, which refuses alias bombs, deep nesting and files over
a size limit before anything walks the data: exit 2, the file named, no traceback.

The timings are printed (`pytest -s`) for the record, not asserted."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.errors import MetasimInputError
from metasim.yamlio import load_yaml


def billion_laughs() -> str:
    """Nine anchors, each a list of nine aliases of the previous: 9**9 values expanded."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{','.join(['*' + prev] * 9)}]")
    return "\n".join(lines) + "\n"


def _timed_main(argv: list[str]) -> tuple[int, float]:
    t0 = time.perf_counter()
    code = main(argv)
    return code, time.perf_counter() - t0


def test_the_bomb_is_small(tmp_path: Path) -> None:
    assert len(billion_laughs().encode()) <= 342


@pytest.mark.parametrize("verb", ["scene validate", "eval perturbation", "eval suite task"])
def test_an_alias_bomb_exits_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], verb: str
) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(billion_laughs())
    out = tmp_path / "run"
    argv = {
        "scene validate": ["scene", "validate", str(bomb)],
        "eval perturbation": ["eval", "--quiet", f"perturbation={bomb}", f"out={out}"],
        "eval suite task": ["eval", "--quiet", f"suite.tasks=[{bomb}]", f"out={out}"],
    }[verb]
    code, seconds = _timed_main(argv)
    err = capsys.readouterr().err
    print(f"\nalias bomb ({len(bomb.read_bytes())} bytes) via `metasim {verb}`: {seconds:.3f} s")
    assert code == 2
    assert str(bomb) in err and "alias" in err and "METASIM_YAML_MAX_NODES" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_an_oversized_file_exits_2_with_the_limit_and_how_to_raise_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "big.yaml"
    row = "  - {name: cube, shape: box, size: [0.02, 0.02, 0.02], mass: 0.1}\n"
    big.write_text("name: big\nobjects:\n" + row * (24_000_000 // len(row)))  # ~24 MB
    code, seconds = _timed_main(["scene", "validate", str(big)])
    err = capsys.readouterr().err
    print(
        f"\n{big.stat().st_size / 1e6:.0f} MB scene via `metasim scene validate`: {seconds:.3f} s"
    )
    assert code == 2
    assert str(big) in err and "over the limit of 1048576 bytes" in err
    assert "METASIM_YAML_MAX_BYTES" in err and "Traceback" not in err
    # the limit is the user's to raise: a file under it is parsed (and then judged)
    small = tmp_path / "small.yaml"
    small.write_text("name: small\nobjects:\n" + row * 40)
    monkeypatch.setenv("METASIM_YAML_MAX_BYTES", "100")
    with pytest.raises(MetasimInputError, match="over the limit of 100 bytes"):
        load_yaml(small)
    monkeypatch.setenv("METASIM_YAML_MAX_BYTES", "100000")
    assert len(load_yaml(small)["objects"]) == 40


def test_deep_nesting_exits_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: deep\nobjects: " + "[" * 5000 + "]" * 5000 + "\n")
    code, seconds = _timed_main(["scene", "validate", str(deep)])
    err = capsys.readouterr().err
    print(f"\n5000-deep nesting via `metasim scene validate`: {seconds:.3f} s")
    assert code == 2
    assert str(deep) in err and "line 2: nested deeper than 64 levels" in err
    assert "METASIM_YAML_MAX_DEPTH" in err and "Traceback" not in err


def test_aliases_within_the_budget_still_load(tmp_path: Path) -> None:
    ok = tmp_path / "ok.yaml"
    ok.write_text("base: &b {mass: 0.1, size: [1, 2, 3]}\nx: *b\ny: *b\n")
    data = load_yaml(ok)
    assert data["x"]["mass"] == 0.1 and data["y"]["size"] == [1, 2, 3]
