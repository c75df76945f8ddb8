"""The front door: README.md stays short, its set-up is the one CI runs, and every relative
link in README.md, docs/ and bench/ reaches an existing file and, for a Markdown page, an
existing heading (GitHub's anchors). Every page under docs/ is reachable from README.md."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "bench").glob("*.md"))]
MAX_README_LINES = 200
SETUP_HEADING = "## Set up and run (two commands)"

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def prose_lines(text: str) -> list[str]:
    """The lines of a Markdown text outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its rendered text lower-cased, punctuation dropped
    (letters, digits, '_', '-' and spaces stay), each space a '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts as its text
    text = text.replace("`", "").replace("*", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a page, with GitHub's -1, -2 suffixes for repeats."""
    found: set[str] = set()
    repeats: dict[str, int] = {}
    for line in prose_lines(page.read_text()):
        if m := _HEADING.match(line):
            base = slug(m.group(2))
            n = repeats.get(base, 0)
            found.add(f"{base}-{n}" if n else base)
            repeats[base] = n + 1
    return found


def links(page: Path) -> list[str]:
    """The relative link targets of a page (inline code and code blocks left out)."""
    out = []
    for line in prose_lines(page.read_text()):
        for target in _LINK.findall(_CODE_SPAN.sub("", line)):
            if target and not _SCHEME.match(target):
                out.append(target)
    return out


def broken(page: Path, target: str) -> str | None:
    """Why a link target of `page` does not resolve, or None."""
    path, _, anchor = target.partition("#")
    dest = (page.parent / path).resolve() if path else page
    if not dest.exists():
        return f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"{target}: no heading with anchor #{anchor} in {dest.relative_to(ROOT)}"
    return None


def test_slug_follows_github():
    assert slug("The scripted expert's grasp") == "the-scripted-experts-grasp"
    assert slug("`metasim runs [ROOT]`") == "metasim-runs-root"
    assert slug("Meta-World") == "meta-world"
    assert slug("Compare runs, and query every run") == "compare-runs-and-query-every-run"


def test_readme_is_short():
    n = len(README.read_text().splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines (at most {MAX_README_LINES})"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    problems = [why for t in links(page) if (why := broken(page, t))]
    assert not problems, f"{page.relative_to(ROOT)}:\n" + "\n".join(problems)


def test_every_docs_page_is_reachable_from_readme():
    seen, todo = {README}, [README]
    while todo:
        page = todo.pop()
        for target in links(page):
            dest = (page.parent / target.partition("#")[0]).resolve()
            if dest.suffix == ".md" and dest.exists() and dest not in seen:
                seen.add(dest)
                todo.append(dest)
    missing = sorted(str(p.relative_to(ROOT)) for p in PAGES if p not in seen)
    assert not [m for m in missing if m.startswith("docs/")], missing


def readme_setup_commands() -> list[str]:
    """The commands of the first code block under the README's set-up heading."""
    text = README.read_text()
    assert SETUP_HEADING in text, f"README.md lost its heading {SETUP_HEADING!r}"
    block = text.split(SETUP_HEADING, 1)[1].split("```", 2)[1]
    lines = block.splitlines()[1:]  # the first line is the fence's language
    return [c for line in lines if (c := line.split(" #", 1)[0].strip())]


def test_readme_setup_is_what_ci_runs():
    commands = readme_setup_commands()
    assert len(commands) == 2, f"the README's set-up is two commands, not {commands}"
    setup, tests = commands
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert setup == "bash scripts/setup.sh"
    assert f"{setup} --no-run" in ci, "CI no longer installs with the README's set-up"
    assert tests == ".venv/bin/python -m pytest"
    assert tests in ci, "CI no longer runs the README's test command"
