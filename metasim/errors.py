"""User-facing errors: bad input that the CLI reports in one paragraph with exit code 2."""

from __future__ import annotations

from typing import Any


class MetasimInputError(Exception):
    """Bad input from the user (a file, a field, an argument). Never shown as a traceback.

    `source` names the file or argument, `problems` lists one line per problem
    ("line 12, objects[0].mass: expected a number > 0, got -1").
    """

    exit_code = 2

    def __init__(self, source: str, problems: list[str], hint: str = "") -> None:
        self.source = source
        self.problems = problems
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        head = f"error: {self.source}: " if self.source else "error: "
        if len(self.problems) == 1:
            text = head + self.problems[0]
        else:
            text = head + f"{len(self.problems)} problems: " + "; ".join(self.problems)
        if self.hint:
            text += f". {self.hint}"
        return text


def one_line(text: str) -> str:
    """A multi-line message (MuJoCo's, ruamel's) as one line."""
    out = ""
    for part in (p.strip() for p in str(text).splitlines()):
        if part:
            out += (" " if out.endswith(":") else "; ") + part if out else part
    return out


def validation_problems(exc: Any, prefix: str = "", show_input: bool = True) -> list[str]:
    """A pydantic ValidationError as problem lines: `<prefix><field path>: <what is wrong>`
    (and the value given)."""
    out = []
    for e in exc.errors():
        line = f"{prefix}{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
        out.append(line + (f", got {e.get('input')!r}" if show_input else ""))
    return out
