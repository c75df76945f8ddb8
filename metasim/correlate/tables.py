"""Reading the small CSV tables of a correlation study, with errors that name line and column.

Every problem is collected, then raised at once as one `MetasimInputError` naming the
file, so a user fixes a whole table in one pass.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from metasim.errors import MetasimInputError
from metasim.guards import check_size, limit


@dataclass
class Row:
    """One data row of a CSV table: its line number and its cells by column name."""

    line: int
    cells: dict[str, str]


@dataclass
class Problems:
    """Problems found in one file, raised together by `check`."""

    source: str
    items: list[str] = field(default_factory=list)

    def add(self, row: Row | None, column: str | None, message: str) -> None:
        where = [f"line {row.line}"] if row is not None else []
        if column is not None:
            where.append(f"column {column!r}")
        self.items.append((", ".join(where) + ": " if where else "") + message)

    def check(self) -> None:
        if self.items:
            raise MetasimInputError(self.source, self.items)


def read_rows(
    path: str | Path,
    required: list[str],
    optional: list[str],
    one_of: list[list[str]] | None = None,
) -> Iterator[Row]:
    """The data rows of a CSV file with a header; missing required columns are an error.

    `one_of`: groups of columns of which at least one group must be wholly present.
    Blank lines are skipped; cells are stripped; a short row has "" in the missing cells.
    """
    path = Path(path)
    if not path.is_file():
        raise MetasimInputError(str(path), ["no such file"])
    check_size(path, limit("METASIM_CSV_MAX_BYTES"), "METASIM_CSV_MAX_BYTES")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise MetasimInputError(str(path), [f"cannot read it as UTF-8 text ({exc})"]) from None
    reader = csv.reader(text.splitlines())
    header = [h.strip() for h in next(reader, [])]
    if not any(header):
        raise MetasimInputError(
            str(path), [f"empty file; expected a header with columns {required}"]
        )
    missing = [c for c in required if c not in header]
    if missing:
        names = ", ".join(repr(c) for c in missing)
        word = "column" if len(missing) == 1 else "columns"
        raise MetasimInputError(
            str(path),
            [f"line 1: missing {word} {names} (header has {header}; expected {required})"],
        )
    if one_of and not any(all(c in header for c in group) for group in one_of):
        groups = " or ".join("+".join(group) for group in one_of)
        raise MetasimInputError(
            str(path), [f"line 1: missing column(s): expected {groups} (header has {header})"]
        )
    for cells in reader:
        if not any(c.strip() for c in cells):
            continue
        values = {h: (cells[i].strip() if i < len(cells) else "") for i, h in enumerate(header)}
        yield Row(reader.line_num, values)


def parse_rate(row: Row, column: str, problems: Problems) -> float | None:
    """A success rate in [0, 1]; None (and a problem recorded) if the cell is not one."""
    text = row.cells.get(column, "")
    try:
        value = float(text)
    except ValueError:
        problems.add(row, column, f"expected a success rate in [0, 1], got {text!r}")
        return None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        hint = " (a percentage? write it as a fraction)" if 1.0 < value <= 100.0 else ""
        problems.add(row, column, f"expected a success rate in [0, 1], got {text!r}{hint}")
        return None
    return value


MAX_COUNT = 10**9  # episodes behind one rate; more would overflow the binomial redraw


def parse_count(row: Row, column: str, problems: Problems, blank_ok: bool = True) -> int | None:
    """A whole number ≥ 1 (an episode count); blank is None when `blank_ok`."""
    text = row.cells.get(column, "")
    if not text and blank_ok:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value != int(value) or not 1 <= value <= MAX_COUNT:
        problems.add(row, column, f"expected a whole number in [1, {MAX_COUNT:g}], got {text!r}")
        return None
    return int(value)


def parse_name(row: Row, column: str, problems: Problems) -> str | None:
    """A non-empty name (task or policy)."""
    text = row.cells.get(column, "")
    if not text:
        problems.add(row, column, "empty; expected a name")
        return None
    return text
