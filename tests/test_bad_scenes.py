"""The malformed-scene corpus: every file in tests/data/bad_scenes/ is broken in one way.

`metasim scene validate` must reject each with exit code 2 and one line on stderr that
names the file, the field (and the line, where the file's header says which), with no
Python traceback. Each corpus file starts with comment lines:

    # expect-field: objects[0].mass     (a substring the error must contain: the field)
    # expect-line: 9                    (optional: the error says `line 9`)
    # expect-text: expected a number    (optional: a substring of the explanation)

Helper files the corpus points at (a broken mesh, MJCF, PNG, robot descriptor) live in
tests/data/bad_scenes/assets/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.paths import ROOT, SCENES

CORPUS_DIR = Path(__file__).parent / "data" / "bad_scenes"
CORPUS = sorted(CORPUS_DIR.glob("*.yaml"))


@dataclass(frozen=True)
class Expect:
    field: str
    line: int | None
    text: str | None


def _expectations(path: Path) -> Expect:
    """Read the `# expect-*:` header (bytes: some corpus files are not valid UTF-8)."""
    found: dict[str, str] = {}
    for raw in path.read_bytes().splitlines():
        line = raw.decode("utf-8", errors="replace").strip()
        if not line.startswith("#"):
            break
        key, sep, value = line.lstrip("#").strip().partition(":")
        if sep and key.startswith("expect-"):
            found[key] = value.strip()
    assert "expect-field" in found, f"{path.name} has no '# expect-field:' header"
    line_no = found.get("expect-line")
    return Expect(
        found["expect-field"], int(line_no) if line_no else None, found.get("expect-text")
    )


def _env_without_menagerie() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("MENAGERIE_ROOT", None)
    return env


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 25, [p.name for p in CORPUS]


def test_corpus_expectations_are_distinct():
    """Each file is broken in its own way: no two files expect the same field and text."""
    seen: dict[tuple[str, int | None, str | None], str] = {}
    for path in CORPUS:
        exp = _expectations(path)
        key = (exp.field, exp.line, exp.text)
        assert key not in seen, f"{path.name} repeats the expectations of {seen[key]}"
        seen[key] = path.name


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_bad_scene_is_rejected_precisely(path: Path, capsys, monkeypatch):
    monkeypatch.delenv("MENAGERIE_ROOT", raising=False)
    exp = _expectations(path)
    code = main(["scene", "validate", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code == 2, err
    assert out == "", out
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one error line, got:\n{err}"
    msg = lines[0]
    assert msg.startswith("error: "), msg
    assert path.name in msg, msg
    assert exp.field in msg, f"field {exp.field!r} not named in: {msg}"
    if exp.line is not None:
        assert f"line {exp.line}," in msg or f"line {exp.line}:" in msg, msg
    if exp.text is not None:
        assert exp.text in msg, f"{exp.text!r} not in: {msg}"


def _launchers() -> list[list[str]]:
    script = Path(sys.executable).parent / "metasim"
    launchers = [[sys.executable, "-m", "metasim.cli"]]
    if script.is_file():
        launchers.append([str(script)])
    return launchers


@pytest.mark.slow
@pytest.mark.parametrize("launcher", _launchers(), ids=lambda cmd: Path(cmd[-1]).name)
def test_console_script_rejects_whole_corpus(launcher: list[str]):
    """The real command over every corpus file at once: exit 2, one error line per file."""
    proc = subprocess.run(
        [*launcher, "scene", "validate", *map(str, CORPUS)],
        capture_output=True,
        text=True,
        errors="replace",
        cwd=ROOT,
        env=_env_without_menagerie(),
        timeout=300,
    )
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == len(CORPUS), proc.stderr[-3000:]
    assert len(proc.stderr.strip().splitlines()) == len(CORPUS), proc.stderr[-3000:]
    for path in CORPUS:
        assert sum(f"error: {path}:" in ln for ln in errors) == 1, path.name
    assert proc.stdout == ""


def test_good_scene_validates(capsys):
    code = main(["scene", "validate", str(SCENES / "lift_cube.yaml")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == ""
    assert out.startswith("ok: ") and "lift_cube" in out


def test_good_and_bad_together_exit_2(capsys):
    """A bad file among good ones fails the run, and the good one is still reported ok."""
    bad = CORPUS_DIR / "negative_mass.yaml"
    code = main(["scene", "validate", str(SCENES / "lift_cube.yaml"), str(bad)])
    out, err = capsys.readouterr()
    assert code == 2
    assert "ok: " in out
    assert "negative_mass.yaml" in err and "Traceback" not in err


def test_missing_file_is_an_input_error(capsys, tmp_path):
    code = main(["scene", "validate", str(tmp_path / "nope.yaml")])
    _, err = capsys.readouterr()
    assert code == 2
    assert "nope.yaml" in err and "no such file" in err and "Traceback" not in err


def test_schema_prints_json(capsys):
    code = main(["scene", "schema"])
    out, _ = capsys.readouterr()
    assert code == 0
    schema = json.loads(out)
    assert "task" in schema["properties"]
    assert "task" in schema.get("required", [])
